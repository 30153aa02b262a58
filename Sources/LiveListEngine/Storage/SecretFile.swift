import Foundation

/// The text of a file that holds one secret (a token, a password: a Docker or Kubernetes secret
/// mounted as a file), without its final line break; nil when it cannot be read.
package func secretFileText(atPath path: String) -> String? {
    guard let data = FileManager.default.contents(atPath: path) else { return nil }
    var text = String(decoding: data, as: UTF8.self)
    // "\r\n" is one Character, as "\n" is.
    if text.last == "\n" || text.last == "\r\n" {
        text.removeLast()
    }
    return text
}
