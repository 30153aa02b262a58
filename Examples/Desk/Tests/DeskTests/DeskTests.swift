import DeskApp
import Foundation
import LiveListServer
import LiveListTesting
import Testing

/// The desk as its users meet it, driven in process by LiveListTesting: no socket, no browser.
@Suite struct DeskTests {
    /// A desk on a fresh data directory, with alice (customer), bob (customer) and carol (agent).
    static func desk() async throws -> (TestClient, String) {
        var configuration = ServerConfiguration()
        configuration.dataDirectory = NSTemporaryDirectory() + "desk-tests-\(UUID().uuidString)"
        let app = try await LiveListApp(configuration: configuration)
        try await Desk.configure(app, users: Desk.users("alice:pw-a:customer,bob:pw-b:customer,carol:pw-c:agent"))
        return (TestClient(app), configuration.dataDirectory)
    }

    static func signIn(_ client: TestClient, _ user: String, _ password: String) async throws -> TestBrowser {
        let browser = client.browser()
        try await browser.get("/login")
        let answer = try await browser.submit("/login", ["user": user, "password": password])
        #expect(answer.status == 303, "\(user) signs in")
        return browser
    }

    @Test func aCustomerFilesATicketAndAnAgentWorksIt() async throws {
        let (client, directory) = try await Self.desk()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let alice = try await Self.signIn(client, "alice", "pw-a")
        let carol = try await Self.signIn(client, "carol", "pw-c")
        let bob = try await Self.signIn(client, "bob", "pw-b")

        // The form: errors in the form with 422, then a flash after the redirect.
        try await alice.get("/tickets/new")
        let wrong = try await alice.submit("/tickets/new", ["title": " ", "priority": "soon"])
        #expect(wrong.status == 422 && wrong.text.contains("Required.") && wrong.text.contains("Choose one of the values offered."))
        let filed = try await alice.submit("/tickets/new", ["title": "Printer <jammed>", "priority": "normal"])
        let mine = try await alice.follow(filed)
        #expect(mine.text.contains("Ticket #1 filed.") && mine.text.contains("#1 Printer &lt;jammed&gt;"))
        #expect(mine.text.contains("<title>My tickets · Desk</title>") && mine.text.contains("Sign out alice"))

        // The agent's queue, in sections by priority; bob's tickets do not show alice's.
        let queue = try await carol.get("/queue")
        #expect(queue.status == 200 && queue.text.contains(#"data-section="normal""#) && queue.text.contains("Printer &lt;jammed&gt;"))
        #expect(try await !bob.get("/tickets").text.contains("Printer"))
        #expect(try await bob.get("/queue").status == 403, "the queue is for agents")
        #expect(try await bob.get("/lists/queue").status == 404, "and so is its list")

        // Re-prioritise with a typed payload, then close: alice's view follows, with no write of its own.
        #expect(try await carol.act("queue", "setPriority;InVyZ2VudCI", cell: "1").status == 204)
        let moved = try #require(try await carol.changes("queue"))
        #expect(moved.kinds.contains("move") || moved.kinds.contains("delete"))
        #expect(try await carol.act("queue", "close", cell: "1").status == 204)
        var closed = false
        for _ in 0 ..< 200 where !closed {
            if let change = try await alice.changes("tickets"), change.mentions("closed") { closed = true } else { try await Task.sleep(for: .milliseconds(10)) }
        }
        #expect(closed, "the customer's view shows the ticket closed")
        let bobs = try await bob.changes("tickets")
        #expect(!(bobs?.mentions("Printer") ?? false), "alice's ticket never reaches bob's view")
    }

    @Test func errorPagesWearTheDesksLayout() async throws {
        let (client, directory) = try await Self.desk()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let page = try await client.browser().get("/no/such/page")
        #expect(page.status == 404 && page.text.contains("· Desk</title>") && !page.text.contains("LiveList"))
        #expect(try await client.browser().get("/desk/desk.css").status == 200)
    }
}
