/// A sign-in that ended before its cookie expired (a sign-out): every node refuses its cookie afterwards.
public struct EndedSignIn: Sendable, Hashable, Codable {
    /// Names the sign-in: 32 lowercase hex digits (a MAC of its nonce), never the nonce itself.
    public var digest: String
    /// When the sign-in was made, in whole seconds since 1970.
    public var issued: Int
    /// When the sign-in's cookie expires, in whole seconds since 1970: the record is kept until then.
    public var expires: Int

    public init(digest: String, issued: Int, expires: Int) {
        self.digest = digest
        self.issued = issued
        self.expires = expires
    }
}
