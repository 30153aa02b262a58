import LiveListEngine
@testable import LiveListServer
import LiveListTestSupport
import Testing

/// A committed change finds the groups it may touch through the index of held groups by value: never
/// fewer than a visit of every group would find, and without visiting the others.
@Suite struct GroupIndexTests {
    /// A query over `tickets` by customer and team, and over `notes` by customer only.
    static let query = LiveQueryDefinition(
        sql: "SELECT 1", names: ["customer", "team"], parameters: [:],
        tables: [.table("tickets", matching: ["customer": "customer", "team": "team_name"]), .table("notes", matching: ["customer": "author"])],
        limit: 10
    )

    /// The groups `change` touches, found through the index (or all, when it may touch any).
    static func touched(_ change: TableChange, groups: [String: [String]], index: GroupIndex) -> Set<String> {
        let candidates = index.candidates(for: change, of: query) ?? Set(groups.keys)
        return candidates.filter { query.isTouched(by: change, values: groups[$0]!) }
    }

    @Test func theIndexFindsExactlyTheGroupsAVisitOfEveryGroupFinds() {
        let seed = UInt64.random(in: 1 ... .max)
        print("GroupIndexTests seed \(seed)")
        var generator = SplitMix64(seed: seed)
        let customers = (0 ..< 12).map { "c\($0)" }
        let teams = ["red", "blue", "green"]
        var groups: [String: [String]] = [:]
        var index = GroupIndex(parameters: 2)
        for round in 0 ..< 2_000 {
            // Groups come and go.
            let values = [customers.randomElement(using: &generator)!, teams.randomElement(using: &generator)!]
            let key = LiveQueryDefinition.group(values)
            if groups[key] == nil, Bool.random(using: &generator) {
                groups[key] = values
                index.insert(key, values: values)
            } else if let held = groups.removeValue(forKey: key) {
                index.remove(key, values: held)
            }
            // A change of either table, reporting some of its columns, or none, or everything.
            let table = ["tickets", "notes", "other", nil].randomElement(using: &generator)!
            var reported: [String: Set<String>]? = [:]
            for column in ["customer", "team_name", "author"] where Bool.random(using: &generator) {
                let pool = column == "team_name" ? teams : customers
                reported?[column] = Set((0 ..< Int.random(in: 0 ... 3, using: &generator)).map { _ in pool.randomElement(using: &generator)! })
            }
            if Int.random(in: 0 ..< 10, using: &generator) == 0 { reported = nil }
            let change = TableChange(table: table, values: reported)
            let visited = Set(groups.keys.filter { Self.query.isTouched(by: change, values: groups[$0]!) })
            #expect(Self.touched(change, groups: groups, index: index) == visited, "round \(round) (seed \(seed)): \(change)")
        }
    }

    @Test func aChangeNamingOneCustomerLooksAtThatCustomersGroupsAlone() {
        var index = GroupIndex(parameters: 2)
        var groups: [String: [String]] = [:]
        for customer in 0 ..< 1_000 {
            let values = ["c\(customer)", "red"]
            groups[LiveQueryDefinition.group(values)] = values
            index.insert(LiveQueryDefinition.group(values), values: values)
        }
        let change = TableChange(table: "tickets", values: ["customer": ["c7"], "team_name": ["red", "blue"]])
        let probes = Self.query.probes(for: change)
        #expect(probes?.count == 1 && probes?.first?.position == 0, "the narrowest column, the customer's")
        #expect(index.groups(at: 0, amongValues: ["c7"]) == [LiveQueryDefinition.group(["c7", "red"])])
        #expect(Self.query.probes(for: TableChange(table: "other", values: ["customer": ["c7"]]))?.isEmpty == true, "a table the query does not read")
        #expect(Self.query.probes(for: .everything) == nil)
        #expect(Self.query.probes(for: TableChange(table: "tickets", values: ["title": ["x"]])) == nil, "no matching column reported: any group")
    }
}
