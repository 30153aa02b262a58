import ListDiff
import LiveListTestSupport
import Testing

/// An element: identity `id`, content `payload`.
struct Item: Differentiable, Hashable, CustomStringConvertible {
    var id: Int
    var payload: Int = 0

    var differenceIdentifier: Int { id }

    func isContentEqual(to source: Item) -> Bool {
        payload == source.payload
    }

    var description: String { payload == 0 ? "\(id)" : "\(id)'\(payload)" }
}

/// A section: identity `id`, own content `payload` (its "header"), and its items.
struct TestSection: DifferentiableSection, Hashable, CustomStringConvertible {
    var id: Int
    var payload: Int = 0
    var elements: [Item]

    var differenceIdentifier: Int { id }

    func isContentEqual(to source: TestSection) -> Bool {
        payload == source.payload
    }

    var description: String { "S\(id)\(payload == 0 ? "" : "'\(payload)")\(elements)" }
}

/// Something that went wrong while applying a changeset, described for the test report.
struct ApplyFailure: Error, CustomStringConvertible {
    var description: String
}

/// Applies `changeset` to `source` following exactly the rules documented on `StagedChangeset` and
/// `Changeset`, taking the content of updated and inserted items and sections from `target`.
/// It checks every index it is given instead of trapping, and throws on the first bad one.
func apply(_ changeset: StagedChangeset, to source: [TestSection], target: [TestSection]) throws -> [TestSection] {
    var data = source
    var targetItems = [Int: Item]()
    for section in target {
        for item in section.elements {
            targetItems[item.id] = item
        }
    }
    let targetSections = Dictionary(target.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
    func check(_ condition: Bool, _ message: @autoclosure () -> String) throws {
        if !condition {
            throw ApplyFailure(description: message())
        }
    }
    func slot(_ index: Int) throws -> SectionSlot {
        try check(changeset.layout.indices.contains(index), "layout has no section \(index)")
        return changeset.layout[index]
    }

    var lastStage: Changeset.Stage?
    for stage in changeset.stages {
        if let lastStage {
            try check(lastStage < stage.stage, "stages out of order: \(lastStage) then \(stage.stage)")
        }
        lastStage = stage.stage
        try check(!stage.isEmpty, "empty stage \(stage.stage)")

        switch stage.stage {
        case .removeAndUpdate:
            try check(stage.sectionInserted.isEmpty && stage.sectionMoved.isEmpty && stage.sectionDeleted.isEmpty
                && stage.elementInserted.isEmpty && stage.elementMoved.isEmpty, "stage 1 holds other kinds")
            for path in stage.elementUpdated {
                try check(data.indices.contains(path.section), "update: no section \(path)")
                try check(data[path.section].elements.indices.contains(path.element), "update: no element \(path)")
                let id = data[path.section].elements[path.element].id
                let new = try #require(targetItems[id], "updated item \(id) is not in the target")
                try check(new.payload != data[path.section].elements[path.element].payload, "needless update \(id)")
                data[path.section].elements[path.element] = new
            }
            for index in stage.sectionUpdated {
                try check(data.indices.contains(index), "section update: no section \(index)")
                let new = try #require(targetSections[data[index].id], "updated section is not in the target")
                data[index].payload = new.payload
            }
            let deleted = Dictionary(grouping: stage.elementDeleted, by: \.section)
            for (section, paths) in deleted {
                try check(data.indices.contains(section), "delete: no section \(section)")
                let indices = paths.map(\.element).sorted(by: >)
                try check(Set(indices).count == indices.count, "delete: repeated path")
                for index in indices {
                    try check(data[section].elements.indices.contains(index), "delete: no element \(index)")
                    data[section].elements.remove(at: index)
                }
            }

        case .placeSections:
            try check(stage.elementDeleted.isEmpty && stage.elementInserted.isEmpty && stage.elementMoved.isEmpty
                && stage.elementUpdated.isEmpty && stage.sectionUpdated.isEmpty && stage.sectionDeleted.isEmpty,
                "stage 2 holds other kinds")
            var moving = [Int: TestSection]()
            for move in stage.sectionMoved {
                try check(data.indices.contains(move.source), "section move: no section \(move.source)")
                moving[move.target] = data[move.source]
            }
            for index in stage.sectionMoved.map(\.source).sorted(by: >) {
                data.remove(at: index)
            }
            for index in stage.sectionInserted {
                guard case let .target(targetIndex) = try slot(index) else {
                    throw ApplyFailure(description: "inserted section \(index) is not a target section")
                }
                try check(moving[index] == nil, "section \(index) inserted and moved in")
                moving[index] = TestSection(id: target[targetIndex].id, payload: target[targetIndex].payload, elements: [])
            }
            for index in moving.keys.sorted() {
                try check(index <= data.count, "section insert beyond the end: \(index)")
                data.insert(moving[index]!, at: index)
            }

        case .placeElements:
            try check(stage.sectionDeleted.isEmpty && stage.sectionInserted.isEmpty && stage.sectionMoved.isEmpty
                && stage.sectionUpdated.isEmpty && stage.elementUpdated.isEmpty && stage.elementDeleted.isEmpty,
                "stage 3 holds other kinds")
            var incoming = [ElementPath: Item]()
            for move in stage.elementMoved {
                let from = move.source
                try check(data.indices.contains(from.section), "move: no section \(from)")
                try check(data[from.section].elements.indices.contains(from.element), "move: no element \(from)")
                try check(incoming[move.target] == nil, "two items moved to \(move.target)")
                incoming[move.target] = data[from.section].elements[from.element]
            }
            let removals = Dictionary(grouping: stage.elementMoved.map(\.source), by: \.section)
            for (section, paths) in removals {
                let indices = paths.map(\.element).sorted(by: >)
                try check(Set(indices).count == indices.count, "move: repeated source path")
                for index in indices {
                    data[section].elements.remove(at: index)
                }
            }
            for path in stage.elementInserted {
                guard case let .target(targetIndex) = try slot(path.section) else {
                    throw ApplyFailure(description: "insert into a deleted section: \(path)")
                }
                try check(target[targetIndex].elements.indices.contains(path.element), "insert: no target item \(path)")
                try check(incoming[path] == nil, "two items placed at \(path)")
                incoming[path] = target[targetIndex].elements[path.element]
            }
            let order = incoming.keys.sorted { ($0.section, $0.element) < ($1.section, $1.element) }
            for path in order {
                try check(data.indices.contains(path.section), "place: no section \(path)")
                try check(path.element <= data[path.section].elements.count, "place beyond the end: \(path)")
                data[path.section].elements.insert(incoming[path]!, at: path.element)
            }

        case .deleteSections:
            try check(stage.changeCount == stage.sectionDeleted.count, "stage 4 holds other kinds")
            for index in stage.sectionDeleted.sorted(by: >) {
                try check(data.indices.contains(index), "section delete: no section \(index)")
                guard case .deleted = try slot(index) else {
                    throw ApplyFailure(description: "deleted section \(index) is a target section")
                }
                data.remove(at: index)
            }
        }
    }
    return data
}

/// The length of a longest strictly increasing subsequence, by the quadratic textbook method: an
/// independent check of the differ's O(n log n) one.
func longestIncreasingLength(_ values: [Int]) -> Int {
    var best = [Int](repeating: 1, count: values.count)
    for i in values.indices {
        for j in 0 ..< i where values[j] < values[i] {
            best[i] = max(best[i], best[j] + 1)
        }
    }
    return best.max() ?? 0
}

/// The fewest moves that reorder `source` into `target`: survivors that change section, plus, in each
/// surviving section, the survivors staying in it that lie off a longest increasing subsequence; and
/// likewise for the surviving sections.
func fewestMoves(from source: [TestSection], to target: [TestSection]) -> (sections: Int, elements: Int) {
    var sourceSectionIndex = [Int: Int]()
    for (index, section) in source.enumerated() {
        sourceSectionIndex[section.id] = index
    }
    var sourcePosition = [Int: (section: Int, index: Int)]()
    for (sectionIndex, section) in source.enumerated() {
        for (index, item) in section.elements.enumerated() {
            sourcePosition[item.id] = (sectionIndex, index)
        }
    }
    let survivingSections = target.compactMap { sourceSectionIndex[$0.id] }
    let sectionMoves = survivingSections.count - longestIncreasingLength(survivingSections)

    var elementMoves = 0
    for section in target {
        let home = sourceSectionIndex[section.id]
        var staying = [Int]()
        for item in section.elements {
            guard let position = sourcePosition[item.id] else { continue }
            if position.section == home {
                staying.append(position.index)
            } else {
                elementMoves += 1
            }
        }
        elementMoves += staying.count - longestIncreasingLength(staying)
    }
    return (sectionMoves, elementMoves)
}

extension StagedChangeset {
    var sectionMoveCount: Int { stages.reduce(0) { $0 + $1.sectionMoved.count } }
    var elementMoveCount: Int { stages.reduce(0) { $0 + $1.elementMoved.count } }
}

/// Shorthand: a section with plain items.
func section(_ id: Int, payload: Int = 0, _ items: [Int]) -> TestSection {
    TestSection(id: id, payload: payload, elements: items.map { Item(id: $0) })
}
