/// The parameter sets (groups) a live query holds on a node, by each parameter's value, so that a
/// committed change finds the groups it may touch without visiting the others: what a change costs the
/// node follows the groups it names, not the groups held.
struct GroupIndex {
    /// For each parameter, by its position in the query's names: each value's groups.
    private var byValue: [[String: Set<String>]]

    init(parameters: Int) {
        byValue = Array(repeating: [:], count: parameters)
    }

    /// Adds group `key`, whose parameters have `values`.
    mutating func insert(_ key: String, values: [String]) {
        for (position, value) in values.enumerated() where byValue.indices.contains(position) {
            byValue[position][value, default: []].insert(key)
        }
    }

    /// Removes group `key`, whose parameters have `values`.
    mutating func remove(_ key: String, values: [String]) {
        for (position, value) in values.enumerated() where byValue.indices.contains(position) {
            byValue[position][value]?.remove(key)
            if byValue[position][value]?.isEmpty == true {
                byValue[position].removeValue(forKey: value)
            }
        }
    }

    /// The groups whose parameter at `position` has one of `values`.
    func groups(at position: Int, amongValues values: Set<String>) -> Set<String> {
        guard byValue.indices.contains(position) else { return [] }
        var found = Set<String>()
        for value in values {
            if let keys = byValue[position][value] {
                found.formUnion(keys)
            }
        }
        return found
    }

    /// The groups that `change` may touch, found by value: every group that
    /// ``LiveQueryDefinition/isTouched(by:values:)`` accepts is among them. Nil when any group may be.
    func candidates(for change: TableChange, of query: LiveQueryDefinition) -> Set<String>? {
        guard let probes = query.probes(for: change) else { return nil }
        var found = Set<String>()
        for probe in probes {
            found.formUnion(groups(at: probe.position, amongValues: probe.values))
        }
        return found
    }
}

extension LiveQueryDefinition {
    /// Where the groups that `change` may touch are found: for each watched table it names, one
    /// parameter (by position) and the values that the changed rows had in that parameter's column.
    /// Every group that ``isTouched(by:values:)`` accepts is among them. Nil when any group may be
    /// touched: a change that names no table or no values, a table watched without matching columns,
    /// or a change that reports none of them. Empty when the query does not read the table.
    func probes(for change: TableChange) -> [(position: Int, values: Set<String>)]? {
        guard let table = change.table else { return nil }
        var probes: [(position: Int, values: Set<String>)] = []
        for watched in tables where watched.table == table {
            guard let changed = change.values, !watched.matching.isEmpty else { return nil }
            let reported = watched.matching.sorted { $0.key < $1.key }.compactMap { parameter, column -> (position: Int, values: Set<String>)? in
                guard let position = names.firstIndex(of: parameter), let values = changed[column] else { return nil }
                return (position, values)
            }
            // A group must have a reported value in every matching column: one column narrows them.
            guard let narrowest = reported.min(by: { $0.values.count < $1.values.count }) else { return nil }
            probes.append(narrowest)
        }
        return probes
    }
}
