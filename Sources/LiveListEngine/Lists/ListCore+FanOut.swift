import LiveListHTML

/// The streams of one fan-out pass, and how far the pass has come.
struct FanOutPass {
    /// The streams when the pass began (later ones start at the version they subscribed at).
    let streams: [Subscription]
    /// The version when the pass began: a pass that ends on another starts the next.
    let version: Int
    /// The next stream to bring up to date.
    var next = 0
}

extension ListCore {
    /// Logs a new changeset and sends it to the streams; returns its JSON, encoded once for the log,
    /// every stream and the writer's answer.
    ///
    /// Streams are written to in slices of ``ListConfiguration/fanOutSlice``: the first slice now, the
    /// others in later turns of the list's actor, between which writes are answered. A pass brings each
    /// stream it reaches to the version current then (one changeset from the stream's own version, which
    /// covers every version it missed), so that when changes come faster than the node can send each to
    /// every stream, the streams skip versions instead of the writers waiting for them.
    @discardableResult
    func publish(_ changeset: ListChangeset) -> [UInt8] {
        noteVersion()
        let encoded = EncodedChangeset(changeset)
        log.append(changeset, bytes: encoded.count)
        counters.changesets += 1
        // One event for every single-list stream: framed once for the transport, shared by all of them.
        latest = (changeset.from, encoded, encoded.event(id: String(changeset.version)))
        if fanOut == nil {
            // No pass in progress: one begins. (One in progress brings every stream it reaches to this
            // version, and the pass after it the streams that it reached before.)
            fanOut = FanOutPass(streams: Array(subscriptions.values), version: changeset.version)
            continueFanOut()
        }
        return encoded.json
    }

    /// Brings the next slice of the pass in progress to the current version, and leaves the rest to a
    /// later turn of the list's actor (all of it now when there is no actor to come back to). A pass
    /// that ends after the version moved starts another, for the streams it reached before.
    func continueFanOut() {
        while var pass = fanOut {
            let slice = owner == nil ? Int.max : max(1, configuration.fanOutSlice)
            let end = pass.streams.count - pass.next > slice ? pass.next + slice : pass.streams.count
            for index in pass.next ..< end {
                bringUp(pass.streams[index])
            }
            pass.next = end
            if end < pass.streams.count {
                fanOut = pass
            } else if pass.version != version {
                fanOut = FanOutPass(streams: Array(subscriptions.values), version: version)
            } else {
                fanOut = nil
                return
            }
            guard let owner else { continue }
            Task { [weak owner] in await owner?.continueFanOut() }
            return
        }
    }

    /// Brings one stream to the current version: the newest changeset when it has the version before,
    /// else one changeset from its own version (a catch-up), unless it is slow.
    private func bringUp(_ subscription: Subscription) {
        guard subscriptions[subscription.id] === subscription else { return }
        if subscription.sink.isClosed {
            drop(subscription.id)
            return
        }
        let current = version
        guard !subscription.isWaitingForDrain, subscription.delivered != current else { return }
        if subscription.sink.queuedBytes > configuration.slowViewerBytes {
            waitForDrain(subscription)
            return
        }
        guard let latest, latest.encoded.version == current, subscription.delivered == latest.from else {
            // Behind (skipped while slow, or while the node sent to other streams): one catch-up for
            // every version it missed.
            counters.coalescedViewers += 1
            send(encodedChanges(since: subscription.delivered, for: subscription.viewer), to: subscription)
            return
        }
        if subscription.multiplexed == nil {
            write(latest.single, version: current, isReset: latest.encoded.isReset, to: subscription)
        } else {
            send(latest.encoded, to: subscription)
        }
    }
}
