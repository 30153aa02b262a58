import Foundation
import LiveListTestSupport
import LiveListTesting
import Synchronization
import Testing
@testable import LiveListServer

/// Lists derived from another list's state, per viewer: they follow every state the source publishes.
@Suite struct DerivedListTests {
    struct Ticket: Codable, Equatable, Sendable {
        var id: Int
        var customer: String
        var title: String
    }

    struct Row: IdentifiableComponent, Equatable {
        var ticket: Ticket
        var id: Int { ticket.id }
        var body: some HTML { span { ticket.title } }
    }

    @Test func aDerivedListShowsEachViewerTheirOwnAndFollowsTheSource() async throws {
        let server = try await RouteClient()
        let app = server.app
        app.authenticate { head in head.headers["X-User"].map { Identity(id: $0) } }
        let desk = try await app.host("desk", state: [Ticket(id: 1, customer: "alice", title: "Printer")]) { tickets in
            Section(id: "all", cells: tickets.map { CellNode(Row(ticket: $0)) })
        }
        try await app.access("desk") { _ in .none }
        try await app.derive("tickets", title: "My tickets", from: desk, perViewer: { tickets, viewer in
            Section(id: "mine", cells: tickets.filter { $0.customer == viewer.identity?.id }.map { CellNode(Row(ticket: $0)) })
        })
        try await app.access("tickets") { identity in identity == nil ? .none : .view }
        let client = TestClient(app)
        let alice = client.browser(headers: [("X-User", "alice")])
        let bob = client.browser(headers: [("X-User", "bob")])
        let alicePage = try await alice.get("/lists/tickets")
        #expect(alicePage.text.contains("Printer") && alicePage.text.contains("<h1>My tickets</h1>"))
        let bobPage = try await bob.get("/lists/tickets")
        #expect(bobPage.status == 200 && !bobPage.text.contains("Printer"), "another customer's ticket never reaches bob's page")

        // One write to the source; each viewer's view follows it, with no write of its own.
        try await desk.updateState { $0.append(Ticket(id: 2, customer: "bob", title: "VPN")) }
        #expect(await eventually {
            (try? await bob.send(.GET, "/lists/tickets", extra: [("Accept", "application/json")]).text.contains("VPN")) == true
        })
        let bobs = try #require(try await bob.changes("tickets"))
        #expect(bobs.mentions("VPN") && !bobs.mentions("Printer"))
        let alices = try await alice.changes("tickets")
        #expect(alices == nil || !(alices?.mentions("VPN") ?? false), "alice is not told of bob's ticket")

        // A burst: every state reaches the view, the last one wins.
        for id in 3 ... 40 {
            try await desk.updateState { $0.append(Ticket(id: id, customer: "alice", title: "Burst \(id)")) }
        }
        #expect(await eventually { (try? await alice.get("/lists/tickets").text.contains("Burst 40")) == true })
        #expect(try await !alice.get("/lists/tickets").text.contains("VPN"))
    }

    struct Count: IdentifiableComponent, Equatable {
        var id: String
        var count: Int
        var body: some HTML { span { "\(id): \(count)" } }
    }

    @Test func aSharedDerivedListRendersOnceForEveryViewerUnderItsOwnRule() async throws {
        let server = try await RouteClient()
        let app = server.app
        app.authenticate { head in head.headers["X-User"].map { Identity(id: $0, roles: $0 == "carol" ? ["agent"] : []) } }
        let desk = try await app.host("desk", state: [Ticket(id: 1, customer: "alice", title: "Printer")]) { tickets in
            Section(id: "all", cells: tickets.map { CellNode(Row(ticket: $0)) })
        }
        try await app.access("desk") { _ in .none }
        let counts = try await app.derive("counts", title: "Open tickets", from: desk) { tickets in
            Section(id: "counts", cells: Dictionary(grouping: tickets, by: \.customer).sorted { $0.key < $1.key }.map { CellNode(Count(id: $0.key, count: $0.value.count)) })
        }
        try await app.access("counts") { identity in identity?.roles.contains("agent") == true ? .view : .none }
        let client = TestClient(app)
        let carol = client.browser(headers: [("X-User", "carol")])
        let alice = client.browser(headers: [("X-User", "alice")])
        let page = try await carol.get("/lists/counts")
        #expect(page.text.contains("alice: 1") && page.text.contains("<h1>Open tickets</h1>"))
        let refused = try await alice.get("/lists/counts")
        #expect(refused.status == 404 && !refused.text.contains("alice: 1"), "the derived list obeys its own rule, not its source's")

        let before = await counts.version
        try await desk.updateState { $0.append(Ticket(id: 2, customer: "bob", title: "VPN")) }
        #expect(await eventually {
            (try? await carol.send(.GET, "/lists/counts", extra: [("Accept", "application/json")]).text.contains("bob: 1")) == true
        })
        let changes = try #require(try await carol.changes("counts"))
        #expect(changes.mentions("bob: 1") && !changes.mentions("Printer"), "the derived list's changeset holds its own cells only")
        // A change of the source that leaves the rendering as it was publishes nothing.
        let reached = await counts.version
        #expect(reached > before)
        try await desk.updateState { $0[0].title = "Printer on floor 2" }
        try await Task.sleep(for: .milliseconds(100))
        #expect(await counts.version == reached, "an unchanged rendering publishes no changeset")
    }

    @Test func aSharedDerivedListNeverShowsAnOlderStateAfterANewerOne() async throws {
        let server = try await RouteClient()
        let app = server.app
        let source = try await app.host("source", state: 0) { value in Section(id: "s", cells: [CellNode(Count(id: "value", count: value))]) }
        let slowOne = SlowRender()
        try await app.derive("mirror", from: source) { value in
            // The rendering of state 1 is slow: a refresh that started on it must not publish after
            // the refresh of state 2.
            Section(id: "m", cells: [CellNode(Count(id: "mirror", count: slowOne.render(value)))])
        }
        try await source.updateState { $0 = 1 }
        #expect(await eventually { slowOne.started })
        try await source.updateState { $0 = 2 }
        let client = TestClient(app)
        let viewer = client.browser()
        #expect(await eventually { (try? await viewer.get("/lists/mirror").text.contains("mirror: 2")) == true })
        try await Task.sleep(for: .milliseconds(400))
        #expect(try await viewer.get("/lists/mirror").text.contains("mirror: 2"), "the slow rendering of 1 came after 2's")
    }

    @Test func aListDerivedFromTwoSourcesFollowsBoth() async throws {
        let server = try await RouteClient()
        let app = server.app
        app.authenticate { head in head.headers["X-User"].map { Identity(id: $0) } }
        let desk = try await app.host("desk", state: [Ticket(id: 1, customer: "alice", title: "Printer")]) { tickets in
            Section(id: "all", cells: tickets.map { CellNode(Row(ticket: $0)) })
        }
        let away = try await app.host("away", state: [String]()) { names in Section(id: "away", cells: names.map { CellNode(Count(id: $0, count: 0)) }) }
        try await app.derive("mine", from: desk, away, perViewer: { tickets, away, viewer in
            Section(id: "mine", cells: tickets.filter { $0.customer == viewer.identity?.id && !away.contains($0.customer) }.map { CellNode(Row(ticket: $0)) })
        })
        try await app.derive("summary", from: desk, away) { tickets, away in
            Section(id: "summary", cells: [CellNode(Count(id: "open", count: tickets.count)), CellNode(Count(id: "away", count: away.count))])
        }
        try await app.access("mine") { identity in identity == nil ? .none : .view }
        try await app.access("summary") { _ in .view }
        let alice = TestClient(app).browser(headers: [("X-User", "alice")])
        #expect(try await alice.get("/lists/mine").text.contains("Printer"))
        try await away.updateState { $0.append("alice") }
        #expect(await eventually { (try? await alice.get("/lists/mine").text.contains("Printer")) == false })
        #expect(await eventually { (try? await alice.get("/lists/summary").text.contains("away: 1")) == true })
        try await desk.updateState { $0.append(Ticket(id: 2, customer: "bob", title: "VPN")) }
        #expect(await eventually { (try? await alice.get("/lists/summary").text.contains("open: 2")) == true })
    }
}

/// A rendering of 1 that takes 200 ms, and says when one has started.
private final class SlowRender: Sendable {
    private let begun = Atomic(false)
    var started: Bool { begun.load(ordering: .acquiring) }

    func render(_ value: Int) -> Int {
        if value == 1 {
            begun.store(true, ordering: .releasing)
            usleep(200_000)
        }
        return value
    }
}
