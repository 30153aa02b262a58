import LiveListHTML
import LiveListTestSupport
import Testing

// The README's example, kept here so that it always compiles and does what the README says.
private struct Todo: IdentifiableComponent, Equatable {
    var id: Int
    var title: String
    var body: some HTML { span(.class("title")) { title } }   // escaped by construction
}

private struct Day {
    var id: String
    var todos: [Todo]
}

@Suite struct ReadmeExampleTests {
    @Test func readmeExampleRendersAndDiffs() throws {
        let showWalk = true
        let archivedDays = [Day(id: "mon", todos: [Todo(id: 3, title: "<Plan>")])]

        let renderer = Renderer(adapter: HTMLAdapter(), updater: PatchUpdater(list: "todo"))
        let changeset = try renderer.render {
            Section(id: "open", header: Header("Open")) {
                Todo(id: 1, title: "Buy milk")
                if showWalk { Todo(id: 2, title: "Walk") }
            }
            Group(of: archivedDays) { day in
                Section(id: day.id) { Group(of: day.todos) { $0 } }
            }
        }
        let json = String(decoding: try #require(changeset).encodedJSON(), as: UTF8.self)
        #expect(json.hasPrefix(#"{"protocol":1,"list":"todo","from":0,"version":1,"#))
        #expect(renderer.updater.rendering.sections.map(\.key) == ["open", "mon"])
        #expect(renderer.updater.rendering.html.contains("&lt;Plan&gt;"))
    }
}
