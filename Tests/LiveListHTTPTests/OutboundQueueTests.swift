#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import LiveListTestSupport
import Testing
@testable import LiveListHTTP

/// A connected pair of non-blocking stream sockets with a small send buffer, so that sends stop part
/// way through a buffer.
private func socketPair() throws -> (sender: Int32, receiver: Int32) {
    var ends: [Int32] = [-1, -1]
    try #require(socketpair(AF_UNIX, streamSocketType, 0, &ends) == 0)
    for end in ends {
        _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
    }
    var size: Int32 = 4_096
    _ = setsockopt(ends[0], SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    return (ends[0], ends[1])
}

/// Reads what is waiting on `fd` without blocking.
private func drain(_ fd: Int32, into received: inout [UInt8]) {
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while true {
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard count > 0 else { return }
        received.append(contentsOf: buffer[0 ..< count])
    }
}

/// The connection's queue of output: every byte appended leaves in order, whatever mix of one and
/// several buffers, partial sends and batch sizes, and a drained queue holds nothing.
@Suite struct OutboundQueueTests {
    @Test func bytesLeaveInOrderAcrossPartialSendsAndBatches() throws {
        let seed = getenv("OUTBOUND_TEST_SEED").flatMap { UInt64(String(cString: $0)) } ?? UInt64.random(in: 1 ... UInt64.max)
        print("OutboundQueueTests: seed \(seed) (replay with OUTBOUND_TEST_SEED=\(seed))")
        var random = SplitMix64(seed: seed)
        let (sender, receiver) = try socketPair()
        defer { close(sender); close(receiver) }
        let iovecs = UnsafeMutablePointer<iovec>.allocate(capacity: 8)
        defer { iovecs.deallocate() }

        var queue = OutboundQueue()
        var expected: [UInt8] = []
        var received: [UInt8] = []
        var sentTotal = 0
        var next: UInt8 = 0
        for _ in 0 ..< 400 {
            // Appends a few buffers (sometimes none, sometimes an empty one, which is dropped).
            for _ in 0 ..< Int.random(in: 0 ... 3, using: &random) {
                let length = Int.random(in: 0 ... 3, using: &random) == 0 ? Int.random(in: 0 ... 9_000, using: &random) : Int.random(in: 0 ... 40, using: &random)
                let chunk = (0 ..< length).map { _ in next &+= 1; return next }
                queue.append(chunk)
                expected.append(contentsOf: chunk)
            }
            #expect(queue.bytes == expected.count - sentTotal)
            // Sends once with a batch of 1 to 8 buffers, then reads some or all of it.
            if queue.bytes > 0 {
                let sent = queue.send(sender, iovecs: iovecs, maxIovecs: Int.random(in: 1 ... 8, using: &random))
                #expect(sent > 0 || errno == EAGAIN, "errno \(errno)")
                sentTotal += max(sent, 0)
            }
            if Bool.random(using: &random) { drain(receiver, into: &received) }
        }
        // Bounded: a queue that cannot send its rest (a wrong buffer or offset) fails, not hangs.
        for _ in 0 ..< 10_000 where queue.bytes > 0 {
            _ = queue.send(sender, iovecs: iovecs, maxIovecs: 8)
            drain(receiver, into: &received)
        }
        #expect(queue.bytes == 0, "the queue could not send its last \(queue.bytes) bytes")
        drain(receiver, into: &received)
        #expect(received.count == expected.count)
        #expect(received == expected, "the bytes differ from the \(Self.firstDifference(received, expected))th on")
    }

    /// More than 32 buffers sent one at a time (the queue then drops the sent ones from its front)
    /// still leave in order, and the last send leaves the queue empty.
    @Test func manySmallBuffersLeaveInOrder() throws {
        let (sender, receiver) = try socketPair()
        defer { close(sender); close(receiver) }
        let iovecs = UnsafeMutablePointer<iovec>.allocate(capacity: 1)
        defer { iovecs.deallocate() }
        var queue = OutboundQueue()
        let chunks = (0 ..< 100).map { Array("event \($0)\n".utf8) }
        for chunk in chunks { queue.append(chunk) }
        var received: [UInt8] = []
        for _ in 0 ..< 70 {
            #expect(queue.send(sender, iovecs: iovecs, maxIovecs: 1) > 0)
            drain(receiver, into: &received)
        }
        queue.append(Array("last\n".utf8))
        for _ in 0 ..< 10_000 where queue.bytes > 0 {
            _ = queue.send(sender, iovecs: iovecs, maxIovecs: 1)
            drain(receiver, into: &received)
        }
        #expect(String(decoding: received, as: UTF8.self) == chunks.map { String(decoding: $0, as: UTF8.self) }.joined() + "last\n")
        #expect(queue.bytes == 0)
    }

    private static func firstDifference(_ a: [UInt8], _ b: [UInt8]) -> Int {
        zip(a, b).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(a.count, b.count)
    }
}
