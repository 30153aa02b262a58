import Testing

/// How a test uses the PostgreSQL of Scripts/with-postgres.sh: most tests use it and run together;
/// those that stop and start it run alone, once every test that uses it now has ended, and hold back
/// those that would start meanwhile. Suites run in parallel, so a restart in one would otherwise
/// break another's connections.
struct DatabaseUse: SuiteTrait, TestTrait, TestScoping {
    var restarts: Bool

    /// On a suite, for each of its tests.
    var isRecursive: Bool { true }

    /// For each test case, never for a suite as a whole.
    func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        test.isSuite || testCase == nil ? nil : self
    }

    func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        if !restarts, test.traits.contains(where: { ($0 as? DatabaseUse)?.restarts == true }) {
            // A restart in a suite that uses the database: the restart's own scope holds it alone.
            return try await function()
        }
        try await DatabaseGate.shared.holding(alone: restarts, function)
    }
}

extension Trait where Self == DatabaseUse {
    /// The test uses the database, with others.
    static var usesTheDatabase: Self { DatabaseUse(restarts: false) }
    /// The test stops and starts the database: it runs alone.
    static var restartsTheDatabase: Self { DatabaseUse(restarts: true) }
}

/// A lock held by many or by one, in the order asked: one waiting to hold it alone holds back those
/// that come after it.
actor DatabaseGate {
    static let shared = DatabaseGate()

    private var sharing = 0
    private var alone = false
    private var waiting: [(alone: Bool, continuation: CheckedContinuation<Void, Never>)] = []

    func holding(alone: Bool, _ body: @Sendable () async throws -> Void) async throws {
        await acquire(alone: alone)
        do {
            try await body()
        } catch {
            release(alone: alone)
            throw error
        }
        release(alone: alone)
    }

    private func acquire(alone: Bool) async {
        if waiting.isEmpty && !self.alone && (!alone || sharing == 0) {
            take(alone: alone)
            return
        }
        await withCheckedContinuation { continuation in
            waiting.append((alone, continuation))
        }
    }

    private func take(alone: Bool) {
        if alone { self.alone = true } else { sharing += 1 }
    }

    private func release(alone: Bool) {
        if alone { self.alone = false } else { sharing -= 1 }
        while let first = waiting.first, !self.alone, !first.alone || sharing == 0 {
            waiting.removeFirst()
            take(alone: first.alone)
            first.continuation.resume()
        }
    }
}
