import Foundation
import LiveListHTML
import LiveListServer
import Logging

/// The shared todo list: add, toggle, edit, delete and reorder, all through buttons of the page's
/// actions form (they work without JavaScript). Open and done items are two sections, so toggling
/// moves a cell across sections; headers count the items (a `reloadSection`). The list keeps its state
/// in the store: each action changes it in the list's ordered write path (stored with its version, then
/// rendered and published), so concurrent actions never overwrite each other. It holds at most
/// ``maximumItems`` items of at most ``maximumTitleLength`` characters: it is on by default, also in
/// Docker, and must not grow without bound.
enum TodoDemo {
    struct Item: Codable, Equatable, Sendable {
        var id: Int
        var title: String
        var done: Bool
    }

    struct State: Codable, Equatable, Sendable {
        var items: [Item]
        var nextID: Int
    }

    /// What the page's buttons and fields send (docs/PROTOCOL.md, "Actions"): `moveAfter` is what
    /// livelist-drag.js posts for a cell dropped after another; `enter` is Enter in any field.
    enum Action: String, ListActions {
        case add, toggle, delete, edit, up, down, moveAfter, clear, enter
    }

    static let name = ListName("todo")!
    static let maximumItems = 100
    static let maximumTitleLength = 200
    /// Bytes of UTF-8 a title may take: four per character, what the longest characters need.
    static let maximumTitleBytes = 4 * maximumTitleLength

    static func start(on app: LiveListApp, logger: Logger) async throws -> Demo {
        let initial = State(items: [
            Item(id: 1, title: "Read the README", done: true),
            Item(id: 2, title: "Open this page in two windows", done: false),
            Item(id: 3, title: "PUT a list with curl", done: false),
        ], nextID: 4)
        let list = try await app.registry.hostApp(name, state: initial, render: render)
        let log: @Sendable (any Error) -> Void = { error in logger.error("todo: \(error)") }
        await list.onAction(Action.self, changing: State.self, onError: log) { action, state in
            try apply(action, to: &state)
        }
        return Demo(task: nil)
    }

    /// What an action does to the state (nothing for an action about a cell that is gone). Titles are
    /// read trimmed and never empty; a title of more than ``maximumTitleLength`` characters or
    /// ``maximumTitleBytes`` bytes is refused (422).
    static func apply(_ action: TypedAction<Action>, to next: inout State) throws(ActionRefusal) {
        func typedTitle(_ field: String) throws(ActionRefusal) -> String? {
            try action.text(field, maxCharacters: maximumTitleLength, maxBytes: maximumTitleBytes)
        }
        let id = action.cell(as: Int.self)
        let index = id.flatMap { id in next.items.firstIndex { $0.id == id } }
        switch (action.kind, index) {
        case (.add, _):
            guard next.items.count < maximumItems, let title = try typedTitle("text") else { return }
            next.items.append(Item(id: next.nextID, title: title, done: false))
            next.nextID += 1
        case let (.toggle, index?):
            next.items[index].done.toggle()
        case let (.delete, index?):
            next.items.remove(at: index)
        case let (.edit, index?):
            guard let title = try typedTitle("text.\(next.items[index].id)") else { return }
            next.items[index].title = title
        case let (.up, index?):
            // Up within its own section: swap with the previous item of the same done-state.
            if let previous = next.items[..<index].lastIndex(where: { $0.done == next.items[index].done }) {
                next.items.swapAt(previous, index)
            }
        case let (.down, index?):
            if let following = next.items[(index + 1)...].firstIndex(where: { $0.done == next.items[index].done }) {
                next.items.swapAt(following, index)
            }
        case let (.moveAfter, index?):
            // Dragged: into the section it was dropped on, after the cell it was dropped below.
            var item = next.items.remove(at: index)
            if let section = action.fields["section"] {
                item.done = section == "done"
            }
            if let after = action.fields["after"].flatMap({ Int($0) }), let anchor = next.items.firstIndex(where: { $0.id == after }) {
                item.done = next.items[anchor].done
                next.items.insert(item, at: anchor + 1)
            } else if let first = next.items.firstIndex(where: { $0.done == item.done }) {
                next.items.insert(item, at: first)
            } else {
                next.items.append(item)
            }
        case (.enter, _):
            // Enter in a field (no JavaScript, or the page's script posting the same form): add what
            // was typed as a new item, and save every title that was changed.
            if let text = try typedTitle("text"), next.items.count < maximumItems {
                next.items.append(Item(id: next.nextID, title: text, done: false))
                next.nextID += 1
            }
            for index in next.items.indices {
                if let edited = try typedTitle("text.\(next.items[index].id)"), edited != next.items[index].title {
                    next.items[index].title = edited
                }
            }
        case (.clear, _):
            next.items.removeAll(where: \.done)
        case (.toggle, nil), (.delete, nil), (.edit, nil), (.up, nil), (.down, nil), (.moveAfter, nil):
            return
        }
    }

    static func render(_ state: State) -> [Section] {
        let open = state.items.filter { !$0.done }
        let done = state.items.filter(\.done)
        return [
            Section(id: "open", header: SectionHeading("To do (\(open.count))"), cells: open.map { CellNode(TodoCell(item: $0)) }, footer: AddTodo()),
            Section(id: "done", header: SectionHeading("Done (\(done.count))"), cells: done.map { CellNode(TodoCell(item: $0)) }, footer: ClearDone(count: done.count)),
        ]
    }
}

/// A section title as a heading (`<h2>`), so that screen readers can jump between the sections.
struct SectionHeading: Component, Equatable {
    var text: String
    init(_ text: String) { self.text = text }

    var body: some HTML {
        h2(.class("livelist-header-text")) { text }
    }
}

/// One item. Its done state is a real checkbox of the actions form without a name (in a 44 px label): the page's script
/// posts `action=toggle:ID` when it changes. Without JavaScript the checkbox is hidden (site.css,
/// `@media (scripting: none)`) and a submit button does the same. Every button is named after its item
/// ("Delete Buy milk"), since a list repeats them.
struct TodoCell: IdentifiableComponent, Equatable {
    var item: TodoDemo.Item
    var id: Int { item.id }

    var body: some HTML {
        let key = String(item.id)
        let name = item.title
        div(.class(item.done ? "todo done" : "todo"), .data("label", name)) {
            span(.class("drag"), .custom("draggable", "true"), .data("drag-action", TodoDemo.Action.moveAfter.rawValue), .title("Drag to reorder"), .aria("hidden", "true")) { "⠿" }
            label(.class("check")) {
                // No name: the page's script posts its value when it changes (a named checkbox would be
                // posted with every action of the form).
                if item.done {
                    listControl(input(.type("checkbox"), .value("\(TodoDemo.Action.toggle.rawValue):\(key)"), .aria("label", "Done: \(name)"), .checked))
                } else {
                    listControl(input(.type("checkbox"), .value("\(TodoDemo.Action.toggle.rawValue):\(key)"), .aria("label", "Done: \(name)")))
                }
            }
            actionButton(TodoDemo.Action.toggle, cell: key, .class("toggle"), .aria("label", item.done ? "Reopen \(name)" : "Done: \(name)")) {
                item.done ? "Reopen" : "Done"
            }
            actionField("text.\(key)", value: item.title, .class("title"), .aria("label", "Title of \(name)"))
            span(.class("tools")) {
                tool(.edit, "Save", title: "Save \(name)")
                tool(.up, "↑", title: "Move \(name) up")
                tool(.down, "↓", title: "Move \(name) down")
                tool(.delete, "✕", title: "Delete \(name)")
            }
        }
    }
}

extension TodoCell {
    /// A tool button of this item, named after it for tooltips and screen readers.
    func tool(_ action: TodoDemo.Action, _ label: String, title: String) -> some HTML {
        actionButton(action, cell: item.id, .title(title), .aria("label", title)) { label }
    }
}

/// The new-item field: Enter in it posts the page's default action `enter` (the first button of the
/// actions form, in the page template), which adds the typed item; `data-reset` lets the page's script
/// empty it once the server took the item.
struct AddTodo: Component, Equatable {
    var body: some HTML {
        div(.class("todo-add")) {
            actionField("text", .placeholder("Something to do"), .aria("label", "New item"), .autocomplete("off"),
                        .custom("maxlength", String(TodoDemo.maximumTitleLength)), .data("reset", "true"))
            actionButton(TodoDemo.Action.add, .title("Add the new item"), .aria("label", "Add the new item")) { "Add" }
        }
    }
}

struct ClearDone: Component, Equatable {
    var count: Int
    var body: some HTML {
        if count > 0 {
            actionButton(TodoDemo.Action.clear, .title("Clear done items"), .aria("label", "Clear done items")) { "Clear done" }
        }
    }
}
