import Foundation
import LiveListHTML
@testable import LiveListEngine
import LiveListTestSupport
import Testing

/// Writes racing on one registry: every list has one ordered write path, so creates, replaces, deletes
/// and limits hold under any interleaving (the end-to-end suite races the real binary the same way).
@Suite struct OrderedWriteTests {
    private func temporaryStore() throws -> (FileListStore, String) {
        let directory = NSTemporaryDirectory() + "livelist-race-\(UUID().uuidString)"
        return (try FileListStore(directory: directory), directory)
    }

    @Test func racingCreatesMakeOneListWithDistinctVersions() async throws {
        for round in 0 ..< 20 {
            let (store, directory) = try temporaryStore()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let registry = try await ListRegistry(store: store)
            let results = await withTaskGroup(of: (Bool, Int)?.self) { group in
                for writer in 0 ..< 12 {
                    group.addTask {
                        let result = try? await registry.put(listName("r"), body: jsonBody(["w\(writer)"]), ifMatch: nil)
                        return result.map { ($0.created, $0.changeset.version) }
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            let answered = results.compactMap { $0 }
            #expect(answered.count == 12, "round \(round): every write answered")
            #expect(answered.filter(\.0).count == 1, "round \(round): exactly one creation, got \(answered)")
            let versions = answered.map(\.1)
            #expect(Set(versions).count == versions.count, "round \(round): versions handed out twice: \(versions.sorted())")
            let list = try #require(registry.existingList(listName("r")))
            #expect(await list.version == versions.max())
        }
    }

    @Test func putRacingDeleteNeverSharesAVersionNorResurrects() async throws {
        for round in 0 ..< 20 {
            let directory = NSTemporaryDirectory() + "livelist-race-\(UUID().uuidString)"
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let store = try FileListStore(directory: directory)
            // Both always succeed: the PUT replaces the list or, after the DELETE, creates it again.
            let (putVersion, deleteVersion, existsBefore) = try await { () async throws -> (Int, Int, Bool) in
                let registry = try await ListRegistry(store: store)
                _ = try await registry.put(listName("d"), body: jsonBody(["a"]), ifMatch: nil)
                async let put = registry.put(listName("d"), body: jsonBody(["b"]), ifMatch: nil).changeset.version
                async let delete = registry.delete(listName("d")).version
                let (putVersion, deleteVersion) = try await (put, delete)
                return (putVersion, deleteVersion, registry.existingList(listName("d")) != nil)
            }()
            #expect(putVersion != deleteVersion, "round \(round): both answered version \(putVersion)")
            // Whichever came last decides.
            #expect(existsBefore == (putVersion > deleteVersion), "round \(round): put \(putVersion), delete \(deleteVersion)")
            // After a restart the same holds: nothing resurrected, nothing lost.
            store.unlock()
            let reopened = try await ListRegistry(store: try FileListStore(directory: directory))
            #expect((await reopened.list(listName("d")) != nil) == existsBefore, "round \(round): the list came back (or went) across a restart")
            let next = try await reopened.put(listName("d"), body: jsonBody(["z"]), ifMatch: nil).changeset.version
            #expect(next > max(putVersion, deleteVersion), "round \(round): a version was reused after the restart")
        }
    }

    @Test func theListLimitHoldsUnderRacingCreates() async throws {
        var limits = RegistryLimits()
        limits.maximumJSONLists = 5
        let registry = try await ListRegistry(store: MemoryListStore(), limits: limits)
        let created = await withTaskGroup(of: Bool.self) { group in
            for writer in 0 ..< 20 {
                group.addTask { (try? await registry.put(listName("l\(writer)"), body: jsonBody(["a"]), ifMatch: nil))?.created == true }
            }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(created == 5)
        #expect(await registry.names().count == 5)
        // A deletion gives its place back.
        let first = try #require(await registry.names().first)
        _ = try await registry.delete(first)
        #expect(try await registry.put(listName("later"), body: jsonBody(["a"]), ifMatch: nil).created)
        await #expect(throws: ListWriteError.self) { try await registry.put(listName("over"), body: jsonBody(["a"]), ifMatch: nil) }
    }

    @Test func preconditionsAreCheckedInThePath() async throws {
        let registry = try await ListRegistry(store: MemoryListStore())
        let absentButExists = await #expect(throws: ListWriteError.self) {
            try await registry.put(listName("p"), body: jsonBody(["a"]), precondition: .exists)
        }
        #expect(absentButExists?.kind == .preconditionFailed)
        #expect(try await registry.put(listName("p"), body: jsonBody(["a"]), precondition: .absent).created)
        let existsButAbsent = await #expect(throws: ListWriteError.self) {
            try await registry.put(listName("p"), body: jsonBody(["b"]), precondition: .absent)
        }
        #expect(existsButAbsent?.kind == .preconditionFailed)
        #expect(try await registry.put(listName("p"), body: jsonBody(["b"]), precondition: .exists).changeset.version == 2)
        // Racing conditional writes on one version: exactly one wins.
        let wins = await withTaskGroup(of: Bool.self) { group in
            for writer in 0 ..< 10 {
                group.addTask { (try? await registry.put(listName("p"), body: jsonBody(["c\(writer)"]), precondition: .version(2))) != nil }
            }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(wins == 1)
    }

    @Test func versionsStopBeforeTheLargestAClientHolds() async throws {
        let store = MemoryListStore(StoredLists(
            highWater: ["v": ListVersion.maximum - 1],
            jsonLists: ["v": .init(version: ListVersion.maximum - 1, body: jsonBody(["a"]))]))
        let registry = try await ListRegistry(store: store)
        #expect(try await registry.put(listName("v"), body: jsonBody(["b"]), ifMatch: nil).changeset.version == ListVersion.maximum)
        let error = await #expect(throws: ListWriteError.self) { try await registry.put(listName("v"), body: jsonBody(["c"]), ifMatch: nil) }
        #expect(error?.kind == .conflict)
        #expect(error?.code == "version_exhausted")
        let deletion = await #expect(throws: ListWriteError.self) { try await registry.delete(listName("v")) }
        #expect(deletion?.code == "version_exhausted")
        #expect(await registry.existingList(listName("v"))?.version == ListVersion.maximum)
    }

    @Test func aFailedStoreWriteLeavesTheListAsItWas() async throws {
        let store = FailingStore(failing: false)
        let registry = try await ListRegistry(store: store)
        _ = try await registry.put(listName("f"), body: jsonBody(["a"]), ifMatch: nil)
        let before = await registry.existingList(listName("f"))!.snapshotJSON()
        store.failing = true
        let error = await #expect(throws: ListWriteError.self) { try await registry.put(listName("f"), body: jsonBody(["b", "c"]), ifMatch: nil) }
        #expect(error?.kind == .storageFailed)
        #expect(error?.detail.contains(store.path) == false, "no server path in an answer: \(String(describing: error))")
        #expect(error?.cause?.contains(store.path) == true, "the operator's log gets the reason")
        let list = try #require(registry.existingList(listName("f")))
        #expect(await list.version == 1)
        #expect(await list.snapshotJSON() == before)
        // A failed creation takes no place and makes no list.
        await #expect(throws: ListWriteError.self) { try await registry.put(listName("g"), body: jsonBody(["a"]), ifMatch: nil) }
        #expect(registry.existingList(listName("g")) == nil)
        store.failing = false
        #expect(try await registry.put(listName("f"), body: jsonBody(["b", "c"]), ifMatch: nil).changeset.version == 2)
    }

    @Test func namesThatStreamsWaitedOnAreForgottenWhenTheStreamsEnd() async throws {
        let registry = try await ListRegistry(store: MemoryListStore())
        var streams: [(RecordingSink, MultiplexedStream)] = []
        for index in 0 ..< 200 {
            let sink = RecordingSink()
            let stream = MultiplexedStream(sink: sink, names: ["w\(index)", "shared"], versions: [:])
            await registry.subscribe(stream, names: [listName("w\(index)"), listName("shared")], since: [:])
            streams.append((sink, stream))
        }
        #expect(await registry.nameCount == 201, "200 names waited on, and the shared one")
        #expect(await registry.actorCount == 0, "names that do not exist cost no actor")
        _ = try await registry.put(listName("shared"), body: jsonBody(["a"]), ifMatch: nil)
        #expect(streams[0].0.events.last?.data.contains(#""list":"shared""#) == true, "a waiting stream sees the creation")
        for (sink, stream) in streams {
            sink.close()
            await registry.forget(stream)
        }
        #expect(await registry.actorCount == 1, "only the list that exists is left")
        #expect(await registry.nameCount == 1)
    }

    @Test func refusedWritesOnNamesThatDoNotExistLeaveNothingBehind() async throws {
        let registry = try await ListRegistry(store: MemoryListStore())
        for index in 0 ..< 50 {
            await #expect(throws: ListWriteError.self) { try await registry.put(listName("n\(index)"), body: jsonBody(["a"]), precondition: .version(3)) }
            await #expect(throws: ListWriteError.self) { try await registry.delete(listName("n\(index)")) }
        }
        #expect(await registry.actorCount == 0)
    }
}
