import Foundation
import LiveListServer
import Synchronization

/// Files a ticket for a customer; the new ticket's number.
typealias Filing = @Sendable (_ customer: String, _ ticket: NewTicket) async throws -> Int

extension Desk {
    /// The agents' queue: open tickets in sections by priority.
    @SectionsBuilder static func queueSections(_ tickets: [Ticket]) -> [Section] {
        for priority in Priority.allCases {
            Section(id: priority.rawValue, header: Header(priority.rawValue.capitalized),
                    cells: tickets.filter { $0.isOpen && $0.priority == priority }.map { CellNode(QueueRow(ticket: $0)) })
        }
    }

    /// A customer's own tickets, newest first.
    static func customerSection(_ tickets: [Ticket]) -> Section {
        Section(id: "mine", cells: tickets.map { CellNode(CustomerRow(ticket: $0)) })
    }

    /// One node: the desk is a stored list's state; each customer's tickets a list derived from it.
    static func tickets(in app: LiveListApp) async throws -> Filing {
        let queue = try await app.host("queue", title: "Open tickets", state: DeskState()) { desk in queueSections(desk.tickets) }
        await queue.onAction(DeskAction.self, changing: DeskState.self) { action, desk in
            guard let index = desk.tickets.firstIndex(where: { $0.id == action.cell(as: Int.self) }) else { return }
            switch action.kind {
            case .close: desk.tickets[index].isOpen = false
            case .setPriority: desk.tickets[index].priority = try action.payload(as: Priority.self)
            }
        }
        try await app.derive("tickets", title: "My tickets", from: queue, perViewer: { desk, viewer in
            customerSection(desk.tickets.filter { $0.customer == viewer.identity?.id }.reversed())
        })
        return { customer, new in
            let filed = Mutex(0)
            try await queue.updateState { desk in
                filed.withLock { $0 = desk.nextID }
                desk.tickets.append(Ticket(id: desk.nextID, customer: customer, title: new.title, priority: new.priority))
                desk.nextID += 1
            }
            return filed.withLock { $0 }
        }
    }

    /// PostgreSQL: the tickets are the table `tickets`, which any program may write (psql, another
    /// service); the queue and each customer's tickets are live queries over it, on every node.
    static func tickets(in database: any LiveQueryDatabase, _ app: LiveListApp) async throws -> Filing {
        for statement in [
            """
            CREATE TABLE IF NOT EXISTS tickets (id bigint PRIMARY KEY, customer text NOT NULL, title text NOT NULL,
                priority text NOT NULL CHECK (priority IN ('low', 'normal', 'urgent')), status text NOT NULL CHECK (status IN ('open', 'closed')))
            """,
            "CREATE SEQUENCE IF NOT EXISTS desk_ticket_ids",
            // Each customer's live query reads their rows alone.
            "CREATE INDEX IF NOT EXISTS tickets_customer ON tickets (customer)",
        ] {
            _ = try await database.execute(statement, parameters: [])
        }
        let columns = #"SELECT id, customer, title, priority, status = 'open' AS "isOpen" FROM tickets"#
        let queue = try await app.liveQuery(
            "queue", title: "Open tickets", sql: "\(columns) WHERE status = 'open' ORDER BY id", watching: [.table("tickets")], limit: 100_000
        ) { (tickets: [Ticket]) in queueSections(tickets) }
        await queue.onAction(DeskAction.self) { action in
            guard let id = action.cell(as: Int.self) else { return }
            switch action.kind {
            case .close: _ = try await database.execute("UPDATE tickets SET status = 'closed' WHERE id = $1::bigint", parameters: [String(id)])
            case .setPriority:
                let priority = try action.payload(as: Priority.self)
                _ = try await database.execute("UPDATE tickets SET priority = $2 WHERE id = $1::bigint", parameters: [String(id), priority.rawValue])
            }
        }
        try await app.liveQuery(
            "tickets", title: "My tickets", sql: "\(columns) WHERE customer = params.customer ORDER BY id DESC",
            parameters: ["customer": { identity in identity?.id }], watching: [.table("tickets", matching: ["customer": "customer"])]
        ) { (tickets: [Ticket]) in customerSection(tickets) }
        return { customer, new in
            // Numbers from the desk's sequence, past any a program wrote itself.
            let rows = try await database.execute("""
                INSERT INTO tickets (id, customer, title, priority, status)
                SELECT greatest(nextval('desk_ticket_ids'), coalesce(max(id), 0) + 1), $1, $2, $3, 'open' FROM tickets RETURNING id
                """, parameters: [customer, new.title, new.priority.rawValue])
            struct Filed: Decodable { var id: Int }
            return try rows.first.map { try JSONDecoder().decode(Filed.self, from: Data($0)).id } ?? 0
        }
    }
}
