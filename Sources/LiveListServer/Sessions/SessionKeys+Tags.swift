extension SessionKeys {
    /// The tag of `text` for `purpose` under the signing secret: 32 lowercase hex digits, the first
    /// 16 bytes of `HMAC-SHA256(secret, "livelist-PURPOSE:" + text)`. The purpose keeps the tags of
    /// different uses apart (a sign-in cookie's tag never verifies as a device cookie's).
    package func tag(_ purpose: String, _ text: String) -> String {
        Self.tag(purpose, text, with: signingMAC)
    }

    /// Whether `tag` is the tag of `text` for `purpose` under the signing secret or a previous one,
    /// compared in constant time.
    package func verifies(_ tag: String, _ purpose: String, _ text: String) -> Bool {
        let presented = Array(tag.utf8)
        var matched = false
        for key in allMACs where constantTimeEqual(Array(Self.tag(purpose, text, with: key).utf8), presented) {
            matched = true
        }
        return matched
    }

    private static func tag(_ purpose: String, _ text: String, with key: HMACSHA256) -> String {
        key.withMAC(of: Array("livelist-\(purpose):".utf8), text) { hex($0.prefix(16)) }
    }
}
