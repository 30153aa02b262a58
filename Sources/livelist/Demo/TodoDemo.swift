import Foundation
import LiveListHTML
import LiveListServer
import Logging

/// The shared todo list: add, toggle, edit, delete and reorder, all through buttons of the page's
/// actions form (they work without JavaScript). Open and done items are two sections, so toggling
/// moves a cell across sections; headers count the items (a `reloadSection`). The state is stored in
/// the data directory and survives restarts.
actor TodoDemo {
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

    private var state: State
    private let list: HostedList
    private let app: LiveListApp
    private let logger: Logger

    private init(state: State, list: HostedList, app: LiveListApp, logger: Logger) {
        self.state = state
        self.list = list
        self.app = app
        self.logger = logger
    }

    static func start(on app: LiveListApp, logger: Logger) async throws -> Demo {
        var state = State(items: [
            Item(id: 1, title: "Read the README", done: true),
            Item(id: 2, title: "Open this page in two windows", done: false),
            Item(id: 3, title: "PUT a list with curl", done: false),
        ], nextID: 4)
        if let bytes = try await app.registry.appState(name) {
            state = try JSONDecoder().decode(State.self, from: Data(bytes))
        }
        let list = try await app.registry.hostApp(name, sections: render(state))
        let demo = TodoDemo(state: state, list: list, app: app, logger: logger)
        await list.onAction { action in await demo.handle(action) }
        return Demo(task: nil)
    }

    func handle(_ action: ListAction) async {
        var next = state
        let id = action.cell.flatMap(Int.init)
        let index = id.flatMap { id in next.items.firstIndex { $0.id == id } }
        switch (action.type, index) {
        case ("add", _):
            let title = (action.fields["text"] ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
            guard !title.isEmpty else { return }
            next.items.append(Item(id: next.nextID, title: String(title.prefix(500)), done: false))
            next.nextID += 1
        case let ("toggle", index?):
            next.items[index].done.toggle()
        case let ("delete", index?):
            next.items.remove(at: index)
        case let ("edit", index?):
            let title = (action.fields["text.\(next.items[index].id)"] ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
            guard !title.isEmpty else { return }
            next.items[index].title = String(title.prefix(500))
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
            if let after = action.fields["after"].flatMap(Int.init), let anchor = next.items.firstIndex(where: { $0.id == after }) {
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
        guard next != state else { return }
        do {
            try app.registry.saveAppState(Self.name, bytes: Array(try JSONEncoder().encode(next)))
            state = next
            try await list.render(Self.render(state))
        } catch {
            logger.error("todo: \(error)")
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
