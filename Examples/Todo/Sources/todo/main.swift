import LiveListServer

enum TodoAction: String, ListActions { case add, enter, toggle, delete }

struct Item: IdentifiableComponent, Codable, Equatable {
    var id: Int, title: String, done = false
    var body: some HTML {
        span(.class(done ? "title done" : "title")) { title }
        actionButton(TodoAction.toggle, cell: id, .aria("label", "Toggle \(title)")) { done ? "Reopen" : "Done" }
        actionButton(TodoAction.delete, cell: id, .aria("label", "Delete \(title)")) { "✕" }
    }
}

let app = try await LiveListApp()
let todo = try await app.host("todo", state: [Item]()) { items in
    Section(id: "todo", header: Header("To do"), footer: TextEntry(TodoAction.add, field: "title", label: "New item", button: "Add")) { items }
}
await todo.onAction(TodoAction.self, changing: [Item].self) { action, items in
    switch action.kind {
    case .add, .enter:
        guard let title = try action.text("title", maxCharacters: 200, maxBytes: 800), items.count < 100 else { return }
        items.append(Item(id: (items.map(\.id).max() ?? 0) + 1, title: title))
    case .toggle:
        if let index = action.index(in: items) { items[index].done.toggle() }
    case .delete:
        items.removeAll { $0.id == action.cell(as: Int.self) }
    }
}
try await app.run { port in print("todo: http://127.0.0.1:\(port)/lists/todo") }
