import Dispatch
import Synchronization

/// The serial executor of one list's actor: a Dispatch queue of its own, off Swift's cooperative
/// thread pool. A list's ordered write path blocks while its store write is made durable (`fsync`);
/// on the cooperative pool (as many threads as cores) a slow disk would stall every other task of the
/// process, the HTTP handlers included. On its own queue it stalls only the lists of its lane.
///
/// Every list's queue targets one of ``laneCount`` lanes (serial queues, one thread each at most),
/// taken in turn: lists of different lanes run in parallel, and however many lists are busy at once
/// (a stream naming 32 lists that do not exist, thousands of times over), their jobs run on at most
/// that many threads, where a queue per list on Dispatch's own pool made a thread for each (262 seen).
final class ListExecutor: SerialExecutor {
    /// The lanes that lists share.
    static let laneCount = 16
    private static let lanes = (0 ..< laneCount).map { DispatchQueue(label: "livelist.lists.lane\($0)") }
    private static let nextLane = Atomic<Int>(0)

    private let queue: DispatchQueue

    init(label: String) {
        let lane = Self.nextLane.wrappingAdd(1, ordering: .relaxed).oldValue & Int.max
        queue = DispatchQueue(label: label, target: Self.lanes[lane % Self.laneCount])
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedSerialExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }
}
