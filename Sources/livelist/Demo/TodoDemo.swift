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

    static let name = ListName("todo")!
    static let maximumItems = 100
    static let maximumTitleLength = 200

    static func start(on app: LiveListApp, logger: Logger) async throws -> Demo {
        let initial = State(items: [
            Item(id: 1, title: "Read the README", done: true),
            Item(id: 2, title: "Open this page in two windows", done: false),
            Item(id: 3, title: "PUT a list with curl", done: false),
        ], nextID: 4)
        let list = try await app.registry.hostApp(name, state: initial, render: render)
        await list.onAction { action in
            do {
                try await list.updateState(State.self) { state in apply(action, to: &state) }
            } catch {
                logger.error("todo: \(error)")
            }
        }
        return Demo(task: nil)
    }

    /// A title as typed: trimmed, at most ``maximumTitleLength`` characters; nil when empty.
    static func title(_ text: String?) -> String? {
        let title = (text ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        return title.isEmpty ? nil : String(title.prefix(maximumTitleLength))
    }

    /// What an action does to the state (nothing for an unknown action or cell).
    static func apply(_ action: ListAction, to next: inout State) {
        let id = action.cell.flatMap { Int($0) }
        let index = id.flatMap { id in next.items.firstIndex { $0.id == id } }
        switch (action.type, index) {
        case ("add", _):
            guard next.items.count < maximumItems, let title = title(action.fields["text"]) else { return }
            next.items.append(Item(id: next.nextID, title: title, done: false))
            next.nextID += 1
        case let ("toggle", index?):
            next.items[index].done.toggle()
        case let ("delete", index?):
            next.items.remove(at: index)
        case let ("edit", index?):
            guard let title = title(action.fields["text.\(next.items[index].id)"]) else { return }
            next.items[index].title = title
        case let ("up", index?):
            // Up within its own section: swap with the previous item of the same done-state.
            if let previous = next.items[..<index].lastIndex(where: { $0.done == next.items[index].done }) {
                next.items.swapAt(previous, index)
            }
        case let ("down", index?):
            if let following = next.items[(index + 1)...].firstIndex(where: { $0.done == next.items[index].done }) {
                next.items.swapAt(following, index)
            }
        case let ("moveAfter", index?):
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
        case ("clear", _):
            next.items.removeAll(where: \.done)
        default:
            return
        }
    }

    static func render(_ state: State) -> [Section] {
        let open = state.items.filter { !$0.done }
        let done = state.items.filter(\.done)
        return [
            Section(id: "open", header: Header("To do (\(open.count))"), cells: open.map { CellNode(TodoCell(item: $0)) }, footer: AddTodo()),
            Section(id: "done", header: Header("Done (\(done.count))"), cells: done.map { CellNode(TodoCell(item: $0)) }, footer: ClearDone(count: done.count)),
        ]
    }
}

struct TodoCell: IdentifiableComponent, Equatable {
    var item: TodoDemo.Item
    var id: Int { item.id }

    var body: some HTML {
        let key = String(item.id)
        div(.class(item.done ? "todo done" : "todo")) {
            span(.class("drag"), .custom("draggable", "true"), .data("drag-action", "moveAfter"), .title("Drag to reorder"), .aria("hidden", "true")) { "⠿" }
            actionButton(item.done ? "☑" : "☐", type: "toggle", cell: key, title: item.done ? "Mark as open" : "Mark as done")
            input(.custom("form", "livelist-actions"), .name("text.\(key)"), .value(item.title), .aria("label", "Title"))
            actionButton("Save", type: "edit", cell: key, title: "Save the title")
            actionButton("↑", type: "up", cell: key, title: "Move up")
            actionButton("↓", type: "down", cell: key, title: "Move down")
            actionButton("✕", type: "delete", cell: key, title: "Delete")
        }
    }
}

struct AddTodo: Component, Equatable {
    var body: some HTML {
        div(.class("todo-add")) {
            input(.custom("form", "livelist-actions"), .name("text"), .placeholder("Something to do"), .aria("label", "New item"))
            actionButton("Add", type: "add", cell: "", title: "Add the item")
        }
    }
}

struct ClearDone: Component, Equatable {
    var count: Int
    var body: some HTML {
        if count > 0 {
            actionButton("Clear done", type: "clear", cell: "", title: "Remove the done items")
        }
    }
}
