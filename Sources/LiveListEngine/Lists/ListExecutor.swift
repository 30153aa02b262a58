import Dispatch
import Foundation
import Synchronization

/// The serial executor of one list's actor, off Swift's cooperative thread pool. A list's ordered
/// write path blocks while its store write is made durable (`fsync`); on the cooperative pool (as
/// many threads as cores) a slow disk would stall every other task of the process, the HTTP handlers
/// included. Here it stalls only the lists of its lane.
///
/// Every list runs on one of ``laneCount`` lanes (a thread each, taken in turn by new lists), in the
/// order its jobs were enqueued: lists of different lanes run in parallel, and however many lists are
/// busy at once (a stream naming 32 lists that do not exist, thousands of times over) their jobs run
/// on those threads and no others. A Dispatch queue per list made a thread of Dispatch's pool for each
/// busy one instead (262 threads, and their memory, after such a burst).
final class ListExecutor: SerialExecutor {
    /// The lanes that lists share.
    static let laneCount = 16
    private static let lanes = (0 ..< laneCount).map { ListLane(index: $0) }
    private static let nextLane = Atomic<Int>(0)

    private let lane: ListLane

    init() {
        let index = Self.nextLane.wrappingAdd(1, ordering: .relaxed).oldValue & Int.max
        lane = Self.lanes[index % Self.laneCount]
    }

    func enqueue(_ job: consuming ExecutorJob) {
        lane.enqueue(UnownedJob(job), on: asUnownedSerialExecutor())
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }
}

/// One thread that runs the jobs of its lists, in the order they were enqueued.
private final class ListLane: Sendable {
    private struct Job: @unchecked Sendable {
        var job: UnownedJob
        var executor: UnownedSerialExecutor
    }

    private let jobs = Mutex<[Job]>([])
    private let ready = DispatchSemaphore(value: 0)

    init(index: Int) {
        let thread = Thread { [self] in run() }
        thread.name = "livelist-lane\(index)"
        thread.start()
    }

    func enqueue(_ job: UnownedJob, on executor: UnownedSerialExecutor) {
        let first = jobs.withLock { jobs in
            jobs.append(Job(job: job, executor: executor))
            return jobs.count == 1
        }
        if first { ready.signal() }
    }

    private func run() {
        while true {
            ready.wait()
            while true {
                // The jobs waiting, taken at once and run with the lock released, so that they may
                // enqueue more (on any lane): those wait for the next turn of this loop.
                let batch = jobs.withLock { jobs in
                    defer { jobs = [] }
                    return jobs
                }
                if batch.isEmpty { break }
                for next in batch {
                    next.job.runSynchronously(on: next.executor)
                }
            }
        }
    }
}
