import Foundation
import LiveListTestSupport
import LiveListTesting
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
        try await app.derive("tickets", title: "My tickets", from: desk) { tickets, viewer in
            Section(id: "mine", cells: tickets.filter { $0.customer == viewer.identity?.id }.map { CellNode(Row(ticket: $0)) })
        }
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
}
