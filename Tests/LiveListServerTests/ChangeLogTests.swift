import LiveListHTML
@testable import LiveListServer
import Testing

private func changeset(_ from: Int, _ to: Int, _ cell: String = "c") -> ListChangeset {
    ListChangeset(list: "l", from: from, version: to, animate: true, operations: [.delete(cell: cell)])
}

@Suite struct ChangeLogTests {
    @Test func lookupAnswersCurrentChangesetsOrReset() {
        var log = ChangeLog(maximumCount: 10, maximumBytes: 1_000)
        for version in 1 ... 5 { log.append(changeset(version - 1, version), bytes: 10) }
        #expect(log.lookup(since: 5, current: 5) == .current)
        #expect(log.lookup(since: 3, current: 5) == .changesets([changeset(3, 4), changeset(4, 5)]))
        #expect(log.lookup(since: 0, current: 5) == .changesets((1 ... 5).map { changeset($0 - 1, $0) }))
        #expect(log.lookup(since: 6, current: 5) == .reset, "a version in the future")
        #expect(log.lookup(since: -1, current: 5) == .reset, "an unknown version")
    }

    @Test func boundedByCountAndBytes() {
        var log = ChangeLog(maximumCount: 3, maximumBytes: 1_000)
        for version in 1 ... 5 { log.append(changeset(version - 1, version), bytes: 10) }
        #expect(log.entries.count == 3)
        #expect(log.lookup(since: 1, current: 5) == .reset, "too old for the log")
        #expect(log.lookup(since: 2, current: 5) == .changesets([changeset(2, 3), changeset(3, 4), changeset(4, 5)]))

        var small = ChangeLog(maximumCount: 100, maximumBytes: 25)
        for version in 1 ... 5 { small.append(changeset(version - 1, version), bytes: 10) }
        #expect(small.entries.count == 2 && small.byteCount == 20)
    }

    @Test func aDiscontinuityStartsTheLogAnew() {
        var log = ChangeLog(maximumCount: 10, maximumBytes: 1_000)
        log.append(changeset(0, 1), bytes: 10)
        log.append(changeset(7, 8), bytes: 10)
        #expect(log.entries.count == 1)
        #expect(log.lookup(since: 0, current: 8) == .reset)
    }

    @Test func joiningConcatenatesOperations() {
        let joined = ListChangeset.joining([changeset(3, 4, "a"), changeset(4, 5, "b")], animatableChangeCount: 300)
        #expect(joined == ListChangeset(list: "l", from: 3, version: 5, animate: true, operations: [.delete(cell: "a"), .delete(cell: "b")]))
        #expect(!ListChangeset.joining([changeset(3, 4, "a"), changeset(4, 5, "b")], animatableChangeCount: 1).animate)
    }

    @Test func versionVectorsParseStrictly() {
        #expect(MultiplexedStream.parseVector("A:3,B.x:7") == ["A": 3, "B.x": 7])
        #expect(MultiplexedStream.parseVector("") == [:])
        #expect(MultiplexedStream.parseVector("A") == nil)
        #expect(MultiplexedStream.parseVector("A:-1") == nil)
        #expect(MultiplexedStream.parseVector("A:x") == nil)
        #expect(MultiplexedStream.parseVector("../x:1") == nil)
        #expect(MultiplexedStream.parseVector("A:1,,B:2") == nil)
    }
}
