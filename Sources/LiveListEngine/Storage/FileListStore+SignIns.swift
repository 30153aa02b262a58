#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// Ended sign-ins: DIR/ended-sign-ins, one line "DIGEST ISSUED EXPIRES" per sign-out, appended and
// fsynced before the call returns, read at load with the expired ones dropped, and written anew
// (atomically) once it holds more than twice the lines still in force.

extension FileListStore {
    static let signInsFile = "ended-sign-ins"

    /// What the file holds: the ended sign-ins in force by digest, and how many lines it has.
    struct SignInLog {
        var live: [String: EndedSignIn] = [:]
        var lines = 0
    }

    var signInsPath: String { directory + "/" + Self.signInsFile }

    /// Appends `ended` to the file and fsyncs it (and the directory, for a new file); an ended
    /// sign-in already kept as it is, or already expired, is not written again.
    public func recordEndedSignIn(_ ended: EndedSignIn) throws(StoreError) {
        let ended = try ended.checked()
        let now = EndedSignIn.secondsNow()
        try signIns.withLock { (log: inout SignInLog?) throws(StoreError) in
            var current = try loaded(log, now: now)
            guard ended.expires > now, current.live[ended.digest] != ended else {
                log = current
                return
            }
            let path = signInsPath
            let isNew = access(path, F_OK) != 0
            try Self.append(Array((ended.line + "\n").utf8), to: path, truncating: isNew)
            if isNew {
                try Self.syncDirectory(directory)
            }
            current.live[ended.digest] = ended
            current.lines += 1
            current.live = current.live.filter { $0.value.expires > now }
            if current.lines > 2 * current.live.count {
                try writeSignIns(&current)
            }
            log = current
        }
    }

    /// The ended sign-ins kept whose cookies have not expired at `now`, by digest.
    public func endedSignIns(now: Int) throws(StoreError) -> [EndedSignIn] {
        let current = try signIns.withLock { (log: inout SignInLog?) throws(StoreError) -> SignInLog in
            let current = try loaded(log, now: EndedSignIn.secondsNow())
            log = current
            return current
        }
        return current.live.values.filter { $0.expires > now }.sorted { $0.digest < $1.digest }
    }

    /// `log` when the file was read, else the file read now.
    private func loaded(_ log: SignInLog?, now: Int) throws(StoreError) -> SignInLog {
        if let log { return log }
        return try readSignIns(now: now)
    }

    /// Reads the file (an empty log when it is missing): a last line that a crash cut short was never
    /// acknowledged and is cut off; any other line that is not `DIGEST ISSUED EXPIRES` stops start-up,
    /// naming the file and the line. The lines expired at `now` are dropped, and the file is written
    /// anew when they were more than half of it.
    func readSignIns(now: Int) throws(StoreError) -> SignInLog {
        let path = signInsPath
        guard access(path, F_OK) == 0 else { return SignInLog() }
        let bytes = try Self.read(path)
        let whole = bytes.lastIndex(of: 0x0A).map { $0 + 1 } ?? 0
        if whole < bytes.count {
            guard truncate(path, off_t(whole)) == 0 else {
                throw StoreError("cannot cut the torn end off \(path): \(Self.errorText())")
            }
        }
        var log = SignInLog()
        for (number, line) in bytes[..<whole].split(separator: 0x0A, omittingEmptySubsequences: false).dropLast().enumerated() {
            let text = String(decoding: line, as: UTF8.self)
            guard let ended = EndedSignIn(line: text) else {
                let shown = text.count > 80 ? String(text.prefix(80)) + "…" : text
                throw StoreError("\(path):\(number + 1): \(shown.debugDescription) is not \"DIGEST ISSUED EXPIRES\" (32 lowercase hex digits, then two times in seconds); the file is corrupt")
            }
            log.live[ended.digest] = ended
            log.lines += 1
        }
        log.live = log.live.filter { $0.value.expires > now }
        if log.lines > 2 * log.live.count {
            try writeSignIns(&log)
        }
        return log
    }

    /// Writes the sign-ins in force as the whole file (temporary file, fsync, rename), one line each.
    private func writeSignIns(_ log: inout SignInLog) throws(StoreError) {
        let text = log.live.values.sorted { $0.digest < $1.digest }.map { $0.line + "\n" }.joined()
        try Self.writeAtomically(Array(text.utf8), to: signInsPath)
        log.lines = log.live.count
    }
}
