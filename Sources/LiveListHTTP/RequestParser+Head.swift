#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension RequestParser {
    // MARK: - Fields

    mutating func parseField(_ range: Range<Int>) -> Result<(name: String, value: String), HTTPError> {
        sectionBytes += range.count + 2
        sectionCount += 1
        if sectionCount > limits.headerCount {
            return .failure(HTTPError(.requestHeaderFieldsTooLarge, code: "too_many_headers", detail: "more than \(limits.headerCount) header fields"))
        }
        let line = buffer[range]
        let first = line[line.startIndex]
        if first == 0x20 || first == 0x09 {
            return .failure(bad("obs_fold", "line folding (obs-fold) or whitespace before a field line"))
        }
        guard let colon = line.firstIndex(of: 0x3A) else { return .failure(bad("malformed_header", "field line has no colon")) }
        let name = line[line.startIndex..<colon]
        guard !name.isEmpty else { return .failure(bad("malformed_header", "empty field name")) }
        for byte in name where !isTokenByte(byte) {
            if byte == 0x20 || byte == 0x09 { return .failure(bad("malformed_header", "whitespace between field name and colon")) }
            return .failure(bad("malformed_header", "invalid character in field name"))
        }
        var valueStart = colon + 1
        var valueEnd = line.endIndex
        while valueStart < valueEnd, line[valueStart] == 0x20 || line[valueStart] == 0x09 { valueStart += 1 }
        while valueEnd > valueStart, line[valueEnd - 1] == 0x20 || line[valueEnd - 1] == 0x09 { valueEnd -= 1 }
        let value = line[valueStart..<valueEnd]
        for byte in value where (byte < 0x20 && byte != 0x09) || byte == 0x7F {
            return .failure(bad(byte == 0 ? "nul_in_header" : "control_in_header", "control character in the value of \(String(decoding: name, as: UTF8.self))"))
        }
        return .success((String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self)))
    }

    // MARK: - Head semantics

    mutating func finishHead() -> HTTPError? {
        bodyLimit = limits.body
        // One pass over the fields finds the ones that matter here; most requests have none but Host.
        var hostCount = 0
        var firstHost: String?
        var hasConnection = false, hasTransferEncoding = false, hasContentLength = false, hasExpect = false
        for field in headers.fields {
            switch field.name.utf8.count {
            case 4 where HTTPHeaders.same(field.name, "Host"):
                hostCount += 1
                if firstHost == nil { firstHost = field.value }
            case 6 where HTTPHeaders.same(field.name, "Expect"): hasExpect = true
            case 10 where HTTPHeaders.same(field.name, "Connection"): hasConnection = true
            case 14 where HTTPHeaders.same(field.name, "Content-Length"): hasContentLength = true
            case 17 where HTTPHeaders.same(field.name, "Transfer-Encoding"): hasTransferEncoding = true
            default: break
            }
        }
        if hostCount > 1 { return bad("invalid_host", "more than one Host field") }
        if version == .http1_1, hostCount == 0 { return bad("missing_host", "HTTP/1.1 request without Host") }
        if let value = firstHost, !HostValidator.isValid(value.utf8) { return bad("invalid_host", "invalid Host value") }
        switch TargetDecoder.decode(rawTarget, method: method) {
        case .failure(let error): return error
        case .success(let target): decoded = target
        }
        host = decoded.authority ?? firstHost ?? ""

        let closes = hasConnection && headers.hasToken("close", in: "Connection")
        keepAlive = version == .http1_1 ? !closes : (!closes && hasConnection && headers.hasToken("keep-alive", in: "Connection"))

        let transferEncodings = hasTransferEncoding ? headers.values("Transfer-Encoding") : []
        let contentLengths = hasContentLength ? headers.values("Content-Length") : []
        var bodyExpected = false
        if !transferEncodings.isEmpty {
            if version == .http1_0 { return bad("bad_framing", "Transfer-Encoding in an HTTP/1.0 request") }
            if !contentLengths.isEmpty { return bad("bad_framing", "both Content-Length and Transfer-Encoding") }
            var codings: [Substring] = []
            for value in transferEncodings {
                for part in value.split(separator: ",", omittingEmptySubsequences: false) {
                    let coding = part.trimmingSpaces
                    if coding.isEmpty { continue }
                    codings.append(coding)
                }
            }
            guard let last = codings.last, HTTPHeaders.same(last, "chunked") else {
                return bad("bad_framing", "chunked is not the final transfer coding")
            }
            if codings.dropLast().contains(where: { HTTPHeaders.same($0, "chunked") }) {
                return bad("bad_framing", "chunked applied more than once")
            }
            if codings.count > 1 {
                return HTTPError(.notImplemented, code: "unsupported_transfer_coding", detail: "transfer codings other than chunked are not implemented")
            }
            state = .chunkSize
            bodyExpected = true
            announcedLength = nil
        } else if !contentLengths.isEmpty {
            var length: Int?
            for value in contentLengths {
                for part in value.split(separator: ",", omittingEmptySubsequences: false) {
                    let digits = part.trimmingSpaces
                    guard !digits.isEmpty, digits.utf8.count <= 18, digits.utf8.allSatisfy(isDigit),
                          let parsed = Int(digits)
                    else { return bad("bad_framing", "invalid Content-Length") }
                    if let length, length != parsed { return bad("bad_framing", "differing Content-Length values") }
                    length = parsed
                }
            }
            let size = length ?? 0
            if size > limits.body { return tooLarge() }
            if size > 0 {
                // What the client announced is not yet sent: the buffer grows as bytes arrive.
                body.reserveCapacity(min(size, 16 << 10))
                state = .fixedBody(remaining: size)
                bodyExpected = true
                announcedLength = size
            } else {
                state = .requestLine
            }
        } else {
            state = .requestLine
        }

        let expectations = hasExpect ? headers.values("Expect") : []
        if version == .http1_1, !expectations.isEmpty {
            guard expectations.count == 1, HTTPHeaders.same(expectations[0], "100-continue") else {
                return HTTPError(.expectationFailed, code: "expectation_failed", detail: "only 100-continue is supported")
            }
            pendingContinue = bodyExpected
        }
        pendingHead = bodyExpected
        return nil
    }

    mutating func parseChunkSize(_ range: Range<Int>) -> Result<Int, HTTPError> {
        let line = buffer[range]
        var index = line.startIndex
        var size = 0
        var digits = 0
        while index < line.endIndex, let value = TargetDecoder.hexValue(line[index]) {
            digits += 1
            if digits > 16 { return .failure(bad("invalid_chunk", "chunk size too large")) }
            size = size << 4 | Int(value)
            index += 1
        }
        if digits == 0 { return .failure(bad("invalid_chunk", "chunk size is not hexadecimal")) }
        if size < 0 || size > Int(Int32.max) * 4 { return .failure(size < 0 ? bad("invalid_chunk", "chunk size too large") : tooLarge()) }
        guard Self.isChunkExtension(line[index...]) else {
            return .failure(bad("invalid_chunk", "invalid chunk extension after the chunk size"))
        }
        return .success(size)
    }

    /// Whether `bytes` is a valid `chunk-ext` of RFC 9112 §7.1.1 (possibly empty):
    /// `*( BWS ";" BWS ext-name [ BWS "=" BWS ext-val ] )`, the name a token, the value a token or
    /// a quoted-string. Whitespace is allowed only where BWS stands: never at the end of the line.
    static func isChunkExtension(_ bytes: ArraySlice<UInt8>) -> Bool {
        var index = bytes.startIndex
        let end = bytes.endIndex
        func skipBlanks() { while index < end, bytes[index] == 0x20 || bytes[index] == 0x09 { index += 1 } }
        func token() -> Bool {
            let first = index
            while index < end, isTokenByte(bytes[index]) { index += 1 }
            return index > first
        }
        while index < end {
            skipBlanks()
            guard index < end, bytes[index] == 0x3B else { return false }
            index += 1
            skipBlanks()
            guard token() else { return false }
            let afterName = index
            skipBlanks()
            guard index < end, bytes[index] == 0x3D else {
                // No value: what follows must be the next extension (blanks then ";") or nothing.
                if index == end { return index == afterName }
                continue
            }
            index += 1
            skipBlanks()
            guard index < end else { return false }
            if bytes[index] == 0x22 {
                index += 1
                var closed = false
                while index < end {
                    let byte = bytes[index]
                    if byte == 0x22 { closed = true; index += 1; break }
                    if byte == 0x5C {
                        index += 1
                        guard index < end, isQuotedTextByte(bytes[index]) || bytes[index] == 0x22 || bytes[index] == 0x5C
                        else { return false }
                    } else if !isQuotedTextByte(byte) {
                        return false
                    }
                    index += 1
                }
                guard closed else { return false }
            } else {
                guard token() else { return false }
            }
        }
        return true
    }
}
