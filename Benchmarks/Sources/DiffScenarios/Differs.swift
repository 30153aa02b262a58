public import ListDiff

/// How many elements the standard library's `difference(from:)` removes and inserts.
public struct StdlibCounts: Equatable, Sendable {
    /// The removals.
    public var removals: Int
    /// The insertions.
    public var insertions: Int

    /// Creates counts.
    public init(removals: Int, insertions: Int) {
        self.removals = removals
        self.insertions = insertions
    }

    /// The counts of a difference.
    public init<Element>(_ difference: CollectionDifference<Element>) {
        self.init(removals: difference.removals.count, insertions: difference.insertions.count)
    }
}

/// A scenario prepared for the standard library's baseline, `target.difference(from: source)`.
///
/// Preparing flattens a sectioned scenario to its cells (the standard library knows no sections), so that
/// ``run()`` times the diff alone.
public struct StdlibBaseline: Sendable {
    private let work: @Sendable () -> StdlibCounts

    /// Prepares `input`.
    public init(_ input: ScenarioInput) {
        switch input {
        case let .uuids(source, target):
            work = { StdlibCounts(target.difference(from: source)) }
        case let .items(source, target):
            work = { StdlibCounts(target.difference(from: source)) }
        case let .sections(source, target):
            let sourceCells = source.flatMap(\.elements)
            let targetCells = target.flatMap(\.elements)
            work = { StdlibCounts(targetCells.difference(from: sourceCells)) }
        }
    }

    /// Runs `target.difference(from: source)` and returns the size of the result.
    public func run() -> StdlibCounts {
        work()
    }
}

extension ScenarioInput {
    /// ListDiff's staged changeset from the source to the target.
    ///
    /// - Throws: ``DiffError`` if identifiers repeat (they never do in a scenario built as specified).
    public func listDiff() throws(DiffError) -> StagedChangeset {
        switch self {
        case let .uuids(source, target): try StagedChangeset(source: source, target: target)
        case let .items(source, target): try StagedChangeset(source: source, target: target)
        case let .sections(source, target): try StagedChangeset(source: source, target: target)
        }
    }
}
