import Dispatch

/// The serial executor of one list's actor: a Dispatch queue of its own, off Swift's cooperative
/// thread pool. A list's ordered write path blocks while its store write is made durable (`fsync`);
/// on the cooperative pool (as many threads as cores) a slow disk would stall every other task of the
/// process, the HTTP handlers included. On its own queue it stalls only that list's writers.
final class ListExecutor: SerialExecutor {
    private let queue: DispatchQueue

    init(label: String) {
        queue = DispatchQueue(label: label)
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
