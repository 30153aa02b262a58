import Dispatch
@testable import LiveList
import Synchronization
import Testing

/// The hook through which a server hosts an app's own renderer: the observer hears every successful
/// render, in the order the renderer applied them.
@Suite struct RendererObserverTests {
    @Test func theObserverHearsTheCurrentSectionsThenEverySuccessfulRenderInOrder() throws {
        let renderer = Renderer(adapter: EmptyAdapter(), updater: FailingUpdater())
        try renderer.render([Section(id: "a")])
        let heard = Mutex<[[String]]>([])
        let observing = renderer.observe { sections, _, updater in
            heard.withLock { $0.append(layout(sections) + ["attempts \(updater.attempts)"]) }
        }
        #expect(observing)
        #expect(!renderer.observe { _, _, _ in }, "one observer at a time")
        try renderer.render([Section(id: "b")])
        #expect(throws: FailingUpdater.Refused.self) { try renderer.render([Section(id: "bad")]) }
        renderer.data = [Section(id: "c")]
        renderer.stopObserving()
        try renderer.render([Section(id: "d")])
        #expect(heard.withLock { $0 } == [["a[]", "attempts 1"], ["b[]", "attempts 2"], ["c[]", "attempts 3"]])
        #expect(renderer.observe { _, _, _ in }, "observed again once stopped")
    }

    @Test func racingRendersReachTheObserverInTheOrderTheyWereApplied() {
        let renderer = Renderer(adapter: EmptyAdapter(), updater: RecordingUpdater.Counting())
        let heard = Mutex<[Int]>([])
        #expect(renderer.observe { _, _, updater in heard.withLock { $0.append(updater.count) } })
        DispatchQueue.concurrentPerform(iterations: 4) { thread in
            for step in 0 ..< 250 {
                _ = try? renderer.render([Section(id: "\(thread)-\(step)")])
            }
        }
        // The updater counts the renders it applied: the observer heard 0 (the state when observed), then 1…1000.
        #expect(heard.withLock { $0 } == Array(0 ... 1_000))
    }
}

extension RecordingUpdater {
    /// Counts the renders it applies; its output is the count.
    struct Counting: Updater {
        var count = 0

        mutating func performUpdates(adapter: EmptyAdapter, from source: [Section], to target: [Section]) throws -> Int {
            count += 1
            return count
        }
    }
}
