import Foundation
import LiveListEngine
import NIOSSL

// TLS as the URL's `sslmode` says (docs/DEPLOYMENT.md, "The URL").

extension PostgresListStore {
    /// The TLS of every connection, as the URL's `sslmode` says (see ``DatabaseURL``): nil for none.
    /// Its files are read now, so that a missing or unreadable one stops start-up with its name.
    static func tlsConfiguration(for url: DatabaseURL) throws(StoreError) -> (configuration: TLSConfiguration, context: NIOSSLContext)? {
        guard url.tlsMode != .disable else { return nil }
        var tls = TLSConfiguration.makeClientConfiguration()
        switch url.tlsMode {
        case .disable, .require: tls.certificateVerification = .none
        case .verifyCA: tls.certificateVerification = .noHostnameVerification
        case .verifyFull: tls.certificateVerification = .fullVerification
        }
        for (what, path) in [("sslrootcert", url.rootCertificatePath), ("sslcert", url.clientCertificatePath), ("sslkey", url.clientKeyPath)] {
            if let path, !FileManager.default.isReadableFile(atPath: path) {
                throw StoreError("the database URL's \(what) \(path) is not a readable file")
            }
        }
        if let root = url.rootCertificatePath {
            tls.trustRoots = .file(root)
        }
        do {
            if let certificate = url.clientCertificatePath, let key = url.clientKeyPath {
                tls.certificateChain = try NIOSSLCertificate.fromPEMFile(certificate).map { .certificate($0) }
                tls.privateKey = .privateKey(try NIOSSLPrivateKey(file: key, format: .pem))
            }
            return (tls, try NIOSSLContext(configuration: tls))
        } catch {
            throw StoreError("the database URL's TLS files cannot be used: \(error)")
        }
    }
}
