import LiveListHTML
@testable import LiveListEngine
import LiveListTestSupport
import Testing

/// A Carbon-style component served as Carbon serves it: what its `shouldContentUpdate` overlooks
/// reaches the page (docs/MIGRATING-FROM-CARBON.md, "Updating a cell").
@Suite struct StalePageTests {
    struct Score: IdentifiableComponent, Equatable {
        var id: String
        var name: String
        var points: Int
        var body: some HTML { span { name }; small { "\(points) points" } }
        func shouldContentUpdate(with next: Score) -> Bool { name != next.name }
    }

    @Test func anUncomparedChangeOfAServedRendererReachesThePage() async throws {
        let registry = try await ListRegistry(store: MemoryListStore())
        let renderer = Renderer(adapter: HTMLAdapter(), updater: PatchUpdater(list: "scores"))
        try renderer.render { Section(id: "board") { Score(id: "a", name: "Ann", points: 1) } }
        let list = try await registry.hostApp(ListName("scores")!, serving: renderer)
        try renderer.render { Section(id: "board") { Score(id: "a", name: "Ann", points: 2) } }
        #expect(await eventually { await list.pageHTML().html.contains("2 points") })
    }
}
