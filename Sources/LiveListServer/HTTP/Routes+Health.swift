import LiveListEngine
import LiveListHTTP

// `/healthz` and `/readyz` on a shared store (several nodes on one database). With the embedded store
// both are the plain `ok` of Metrics.healthz().
extension LiveListApp {
    /// `GET /healthz`: 200 while the process serves, whatever the database does, with the database's
    /// state in the body (`ok`, then `database: ok` or `database: unreachable …`), so that a restarting
    /// database does not get healthy nodes restarted.
    func storeHealthz() -> HTTPResponse {
        var response = HTTPResponse.text("ok\n\(registry.storeHealth.description)\n")
        response.headers.set("Cache-Control", "no-store")
        return response
    }

    /// `GET /readyz`: 200 while the node can serve writes, 503 with `Retry-After` while its database
    /// is unreachable, so that a proxy routes away from it.
    func readyz() -> HTTPResponse {
        let health = registry.storeHealth
        var response = HTTPResponse.text("\(health.isReachable ? "ready" : "not ready")\n\(health.description)\n")
        if !health.isReachable {
            response.status = .serviceUnavailable
            response.headers.set("Retry-After", "2")
        }
        response.headers.set("Cache-Control", "no-store")
        return response
    }
}
