#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// The data directory's lock: an exclusive flock(2) on DIR/lock, which the kernel releases however the
// process ends (docs/DEPLOYMENT.md, "One process per data folder").

extension FileListStore {
    /// A lock that names this very process was released a moment ago (an in-process restart after
    /// `unlock()`) but may still be held for an instant by a child this process is spawning, which
    /// shares the descriptor between its fork and its exec (close-on-exec ends that): it is asked
    /// again for up to a second before the directory counts as in use.
    static func takeLock(_ directory: String) throws(StoreError) -> Int32 {
        let path = directory + "/" + lockFile
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw StoreError("cannot open \(path): \(errorText())")
        }
        let ownPID = String(getpid())
        var attempts = 0
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            let busy = errno == EWOULDBLOCK
            let message = errorText()
            let holder = (try? read(path)).map { String(decoding: $0, as: UTF8.self).filter(\.isNumber) } ?? ""
            if busy && holder == ownPID && attempts < 100 {
                attempts += 1
                usleep(10_000)
                continue
            }
            close(descriptor)
            if busy {
                let who = holder.isEmpty ? "another livelist process" : "another livelist process (pid \(holder))"
                throw StoreError("\(directory) is in use by \(who); stop it, or give this one its own --data")
            }
            throw StoreError("cannot lock \(path): \(message)")
        }
        let pid = Array("\(getpid())\n".utf8)
        if ftruncate(descriptor, 0) == 0 {
            _ = pid.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
        }
        return descriptor
    }
}
