//! Byte counts for people, one rule for every message and table of topoprobe.

/// The binary units, from bytes up: each is 1024 times the one before.
const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];

/// A byte count for people, in the largest binary unit it reaches, with at most two
/// decimals (rounded half up, trailing zeros dropped): `100 B`, `48 KiB`, `1.5 MiB`,
/// `1.25 MiB`, `4.34 GiB`, `1 EiB`. A count that rounds up to 1024 of a unit is said in
/// the next unit (`1 MiB` for one byte short of it).
///
/// ```
/// use topoprobe_files::size_text;
///
/// assert_eq!(size_text(1000), "1000 B");
/// assert_eq!(size_text(256 << 20), "256 MiB");
/// assert_eq!(size_text(1280 << 10), "1.25 MiB");
/// assert_eq!(size_text(4_659_331_072), "4.34 GiB");
/// ```
#[must_use]
pub fn size_text(bytes: u64) -> String {
    let mut unit = 0;
    while unit + 1 < UNITS.len() && bytes >> (10 * (unit + 1)) > 0 {
        unit += 1;
    }
    let scale = 1_u128 << (10 * unit);
    let mut hundredths = (u128::from(bytes) * 100 + scale / 2) / scale;
    if hundredths >= 1024 * 100 && unit + 1 < UNITS.len() {
        // Below 1024 of this unit by less than half a hundredth: exactly 1 of the next.
        unit += 1;
        hundredths = 100;
    }
    let (whole, frac) = (hundredths / 100, hundredths % 100);
    let unit = UNITS[unit];
    if frac == 0 {
        format!("{whole} {unit}")
    } else if frac % 10 == 0 {
        format!("{whole}.{} {unit}", frac / 10)
    } else {
        format!("{whole}.{frac:02} {unit}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_below_one_kib() {
        assert_eq!(size_text(0), "0 B");
        assert_eq!(size_text(1), "1 B");
        assert_eq!(size_text(1023), "1023 B");
    }

    #[test]
    fn the_largest_unit_reached() {
        assert_eq!(size_text(1024), "1 KiB");
        assert_eq!(size_text(48 << 10), "48 KiB");
        assert_eq!(size_text(300 << 20), "300 MiB");
        assert_eq!(size_text(96 << 30), "96 GiB");
        assert_eq!(size_text(1 << 40), "1 TiB");
        assert_eq!(size_text(2 << 50), "2 PiB");
        assert_eq!(size_text(1 << 60), "1 EiB");
        assert_eq!(size_text(u64::MAX), "16 EiB");
    }

    #[test]
    fn two_decimals_at_most() {
        assert_eq!(size_text(1536), "1.5 KiB");
        assert_eq!(size_text(3 << 19), "1.5 MiB");
        assert_eq!(size_text(1280 << 10), "1.25 MiB");
        // 1.375 MiB: half a hundredth rounds up.
        assert_eq!(size_text(1408 << 10), "1.38 MiB");
        assert_eq!(size_text(5000 << 10), "4.88 MiB");
        assert_eq!(size_text(4_659_331_072), "4.34 GiB");
        assert_eq!(size_text(1025), "1 KiB");
    }

    #[test]
    fn rounding_up_to_1024_is_the_next_unit() {
        assert_eq!(size_text((1 << 20) - 1), "1 MiB");
        assert_eq!(size_text((1 << 30) - 1), "1 GiB");
        assert_eq!(size_text((1 << 20) - (6 << 10)), "1018 KiB");
    }
}
