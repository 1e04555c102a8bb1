//! The control messages rank 0 sends to the other ranks, and the limits on what it
//! receives. Pure: encoded as four 64-bit words, decoded with a check.

/// Tag of control messages (rank 0 → a rank).
pub(crate) const TAG_CONTROL: i32 = 11;
/// Tag of a batch header of a ping-pong (number of round trips; 0 ends it).
pub(crate) const TAG_BATCH: i32 = 12;
/// Tag of ping-pong messages.
pub(crate) const TAG_PING: i32 = 13;
/// Tag of bandwidth payloads.
pub(crate) const TAG_DATA: i32 = 14;
/// Tag of the acknowledgement of a bandwidth window, and of its header.
pub(crate) const TAG_ACK: i32 = 15;
/// Tag of a measurement's result (initiator → rank 0).
pub(crate) const TAG_RESULT: i32 = 16;
/// Tag of reports (a rank's [`crate::RankInfo`], a host's [`crate::NodeLayout`], as JSON).
pub(crate) const TAG_REPORT: i32 = 17;

/// Largest rank report accepted, bytes.
pub(crate) const MAX_RANK_REPORT: usize = 1 << 20;
/// Largest layout report accepted, bytes.
pub(crate) const MAX_LAYOUT_REPORT: usize = 32 << 20;

/// Which end of a measurement a rank is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// Starts the exchanges, times them and sends the result to rank 0.
    Initiator,
    /// Answers.
    Responder,
}

/// What rank 0 asks a rank to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Command {
    /// Send this host's layout (the rank is its host's first rank).
    Describe,
    /// Measure the latency with `peer`.
    Latency {
        /// The other rank.
        peer: usize,
        /// This rank's end.
        role: Role,
    },
    /// Measure the bandwidth with `peer`.
    Bandwidth {
        /// The other rank.
        peer: usize,
        /// This rank's end.
        role: Role,
    },
    /// The run is over.
    Stop,
}

impl Command {
    /// The command as four words.
    pub(crate) fn encode(self) -> [u64; 4] {
        let role = |r: Role| u64::from(r == Role::Responder);
        let peer = |p: usize| u64::try_from(p).unwrap_or(u64::MAX);
        match self {
            Self::Describe => [1, 0, 0, 0],
            Self::Latency { peer: p, role: r } => [2, peer(p), role(r), 0],
            Self::Bandwidth { peer: p, role: r } => [3, peer(p), role(r), 0],
            Self::Stop => [4, 0, 0, 0],
        }
    }

    /// Decodes four words for a communicator of `size` ranks; `Err` names what is wrong.
    pub(crate) fn decode(w: [u64; 4], size: usize) -> Result<Self, String> {
        let peer = || {
            usize::try_from(w[1])
                .ok()
                .filter(|&p| p < size)
                .ok_or_else(|| format!("peer {} out of range for {size} ranks", w[1]))
        };
        let role = || match w[2] {
            0 => Ok(Role::Initiator),
            1 => Ok(Role::Responder),
            r => Err(format!("unknown role {r}")),
        };
        match w[0] {
            1 => Ok(Self::Describe),
            2 => Ok(Self::Latency {
                peer: peer()?,
                role: role()?,
            }),
            3 => Ok(Self::Bandwidth {
                peer: peer()?,
                role: role()?,
            }),
            4 => Ok(Self::Stop),
            k => Err(format!("unknown command {k}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_round_trip_and_bad_words_are_refused() {
        for c in [
            Command::Describe,
            Command::Stop,
            Command::Latency {
                peer: 3,
                role: Role::Responder,
            },
            Command::Bandwidth {
                peer: 0,
                role: Role::Initiator,
            },
        ] {
            assert_eq!(Command::decode(c.encode(), 4), Ok(c));
        }
        assert!(Command::decode([2, 4, 0, 0], 4)
            .unwrap_err()
            .contains("peer 4"));
        assert!(Command::decode([3, 1, 7, 0], 4)
            .unwrap_err()
            .contains("role 7"));
        assert!(Command::decode([9, 0, 0, 0], 4)
            .unwrap_err()
            .contains("command 9"));
    }
}
