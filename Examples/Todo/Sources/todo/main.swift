import LiveListServer

struct Item: Codable, Equatable, Sendable { var id: Int, title: String, done = false }
enum TodoAction: String, ListActions { case add, enter, toggle, delete }

struct ItemCell: IdentifiableComponent, Equatable {
    var item: Item
    var id: Int { item.id }
    var body: some HTML {
        span(.class(item.done ? "title done" : "title")) { item.title }
        actionButton(TodoAction.toggle, cell: id, .aria("label", "Toggle \(item.title)")) { item.done ? "Reopen" : "Done" }
        actionButton(TodoAction.delete, cell: id, .aria("label", "Delete \(item.title)")) { "✕" }
    }
}

struct NewItem: Component, Equatable {
    var body: some HTML {
        actionField("title", .placeholder("Something to do"), .aria("label", "New item"), .data("reset", "true"))
        actionButton(TodoAction.add) { "Add" }
    }
}

let app = try await LiveListApp(configuration: .fromEnvironment())
let list = try await app.registry.hostApp(ListName("todo")!, state: [Item]()) { items in
    [Section(id: "todo", header: Header("To do"), footer: NewItem()) { Group(of: items) { ItemCell(item: $0) } }]
}
await list.onAction(TodoAction.self, changing: [Item].self) { action, items in
    switch action.kind {
    case .add, .enter:
        guard let title = action.fields["title"], !title.isEmpty, items.count < 100 else { return }
        items.append(Item(id: (items.map(\.id).max() ?? 0) + 1, title: String(title.prefix(200))))
    case .toggle: if let index = items.firstIndex(where: { $0.id == action.cell(as: Int.self) }) { items[index].done.toggle() }
    case .delete: items.removeAll { $0.id == action.cell(as: Int.self) }
    }
}
try await app.run { port in print("todo: http://127.0.0.1:\(port)/lists/todo") }
