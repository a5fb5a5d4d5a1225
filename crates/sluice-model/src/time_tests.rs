use chrono::{DateTime, TimeZone, Utc};

use super::{format, is_renderable, parse};

fn utc(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32, nanos: u32) -> DateTime<Utc> {
    let whole = Utc
        .with_ymd_and_hms(y, mo, d, h, mi, s)
        .single()
        .expect("valid test date");
    whole + chrono::Duration::nanoseconds(i64::from(nanos))
}

#[test]
fn parses_analytics_go_v2_offset_without_colon() {
    assert_eq!(
        parse("2009-11-10T23:00:00+0000"),
        Some(utc(2009, 11, 10, 23, 0, 0, 0))
    );
}

#[test]
fn parses_z_and_colon_offset_as_the_same_instant() {
    let want = Some(utc(2009, 11, 10, 23, 0, 0, 0));
    assert_eq!(parse("2009-11-10T23:00:00Z"), want);
    assert_eq!(parse("2009-11-10T23:00:00z"), want);
    assert_eq!(parse("2009-11-10T23:00:00+00:00"), want);
}

#[test]
fn applies_negative_half_hour_offset() {
    assert_eq!(
        parse("2009-11-10T17:30:00-05:30"),
        Some(utc(2009, 11, 10, 23, 0, 0, 0))
    );
    assert_eq!(
        parse("2009-11-10T17:30:00-0530"),
        Some(utc(2009, 11, 10, 23, 0, 0, 0))
    );
}

#[test]
fn applies_positive_hour_only_offset() {
    assert_eq!(
        parse("2009-11-11T01:00:00+02"),
        Some(utc(2009, 11, 10, 23, 0, 0, 0))
    );
}

#[test]
fn offset_crossing_midnight_changes_the_date() {
    assert_eq!(
        parse("2010-01-01T00:30:00+01:00"),
        Some(utc(2009, 12, 31, 23, 30, 0, 0))
    );
}

#[test]
fn parses_zero_fractional_digits() {
    assert_eq!(
        parse("2021-03-04T05:06:07Z"),
        Some(utc(2021, 3, 4, 5, 6, 7, 0))
    );
}

#[test]
fn parses_one_to_nine_fractional_digits() {
    let cases = [
        ("2021-03-04T05:06:07.1Z", 100_000_000),
        ("2021-03-04T05:06:07.12Z", 120_000_000),
        ("2021-03-04T05:06:07.123Z", 123_000_000),
        ("2021-03-04T05:06:07.123456Z", 123_456_000),
        ("2021-03-04T05:06:07.123456789Z", 123_456_789),
    ];
    for (text, nanos) in cases {
        assert_eq!(parse(text), Some(utc(2021, 3, 4, 5, 6, 7, nanos)), "{text}");
    }
}

#[test]
fn drops_fractional_digits_beyond_nanoseconds() {
    assert_eq!(
        parse("2021-03-04T05:06:07.1234567891234Z"),
        Some(utc(2021, 3, 4, 5, 6, 7, 123_456_789))
    );
}

#[test]
fn accepts_space_separator_and_comma_fraction() {
    assert_eq!(
        parse("2021-03-04 05:06:07,5+00:00"),
        Some(utc(2021, 3, 4, 5, 6, 7, 500_000_000))
    );
}

#[test]
fn missing_offset_is_read_as_utc() {
    assert_eq!(
        parse("2021-03-04T05:06:07.250"),
        Some(utc(2021, 3, 4, 5, 6, 7, 250_000_000))
    );
}

#[test]
fn date_alone_is_midnight_utc() {
    assert_eq!(parse("2024-05-06"), Some(utc(2024, 5, 6, 0, 0, 0, 0)));
    assert_eq!(parse(" 2024-05-06\n"), Some(utc(2024, 5, 6, 0, 0, 0, 0)));
    assert_eq!(parse("0000-01-01"), Some(utc(0, 1, 1, 0, 0, 0, 0)));
    assert_eq!(parse("9999-12-31"), Some(utc(9999, 12, 31, 0, 0, 0, 0)));
    assert_eq!(parse("2024-02-29"), Some(utc(2024, 2, 29, 0, 0, 0, 0)));
}

#[test]
fn date_alone_formats_as_midnight_utc_milliseconds() {
    let t = parse("2024-05-06").expect("a date alone parses");
    assert_eq!(format(&t), "2024-05-06T00:00:00.000Z");
}

#[test]
fn time_without_seconds_takes_every_offset_form() {
    let cases = [
        ("2024-05-06T19:11", utc(2024, 5, 6, 19, 11, 0, 0)),
        ("2024-05-06T19:11Z", utc(2024, 5, 6, 19, 11, 0, 0)),
        ("2024-05-06t19:11z", utc(2024, 5, 6, 19, 11, 0, 0)),
        ("2024-05-06 19:11", utc(2024, 5, 6, 19, 11, 0, 0)),
        ("2024-05-06T19:11+02:00", utc(2024, 5, 6, 17, 11, 0, 0)),
        ("2024-05-06T19:11+0200", utc(2024, 5, 6, 17, 11, 0, 0)),
        ("2024-05-06T19:11+02", utc(2024, 5, 6, 17, 11, 0, 0)),
        ("2024-05-06T19:11-05:30", utc(2024, 5, 7, 0, 41, 0, 0)),
    ];
    for (text, want) in cases {
        assert_eq!(parse(text), Some(want), "{text}");
    }
}

#[test]
fn time_without_seconds_formats_as_utc_milliseconds() {
    let t = parse("2024-05-06T19:11+02:00").expect("minutes parse");
    assert_eq!(format(&t), "2024-05-06T17:11:00.000Z");
    let t = parse("2024-05-06T19:11Z").expect("minutes parse");
    assert_eq!(format(&t), "2024-05-06T19:11:00.000Z");
}

#[test]
fn time_without_seconds_keeps_the_year_range() {
    assert_eq!(parse("9999-12-31T23:59-01:00"), None);
    assert_eq!(parse("0000-01-01T00:59+01"), None);
    assert_eq!(
        parse("0000-01-01T01:00+01:00"),
        Some(utc(0, 1, 1, 0, 0, 0, 0))
    );
}

#[test]
fn rejects_malformed_and_out_of_range_text() {
    let bad = [
        "",
        "yesterday",
        "May 6, 2024",
        "1714972800",
        "10000-01-01",
        "2021-03-04T05",
        "2021-03-04T0506",
        "2021-03-04T05:06.5Z",
        "2021-03-04T05:06,5",
        "2021-03-04T05:06:",
        "2021-03-04T",
        "2021-03-04Z",
        "2021-03-04+01:00",
        "2021-03-04 +01:00",
        "2021-02-30",
        "2021-03-04T24:00",
        "2021-03-04T05:60Z",
        "2021-3-04T05:06:07Z",
        "2021-03-04T05:06:07.Z",
        "2021-03-04T05:06:07+5",
        "2021-03-04T05:06:07+05:",
        "2021-03-04T05:06:07+24:00",
        "2021-03-04T05:06:07+05:60",
        "2021-03-04T05:06:07Zjunk",
        "2021-02-30T05:06:07Z",
        "2021-13-01T05:06:07Z",
        "2021-03-04T24:00:00Z",
        "2021-03-04T05:60:00Z",
        "2021-03-04T05:06:07 Z",
        "2021-03-04X05:06:07Z",
        "２０２１-03-04T05:06:07Z",
    ];
    for text in bad {
        assert_eq!(parse(text), None, "{text:?} should be rejected");
    }
}

#[test]
fn formats_with_exactly_three_fraction_digits_and_z() {
    assert_eq!(
        format(&utc(2009, 11, 10, 23, 0, 0, 0)),
        "2009-11-10T23:00:00.000Z"
    );
    assert_eq!(
        format(&utc(2009, 11, 10, 23, 0, 0, 123_999_999)),
        "2009-11-10T23:00:00.123Z"
    );
}

#[test]
fn format_output_parses_back_to_the_same_millisecond() {
    let t = utc(1999, 12, 31, 23, 59, 59, 999_000_000);
    assert_eq!(parse(&format(&t)), Some(t));
}

#[test]
fn renderable_range_is_four_digit_years() {
    assert!(is_renderable(&utc(0, 1, 1, 0, 0, 0, 0)));
    assert!(is_renderable(&utc(9999, 12, 31, 23, 59, 59, 0)));
    assert!(!is_renderable(&utc(10000, 1, 1, 0, 0, 0, 0)));
    assert!(!is_renderable(&utc(-1, 1, 1, 0, 0, 0, 0)));
}

#[test]
fn refuses_offsets_that_move_the_utc_instant_past_year_9999() {
    assert_eq!(parse("9999-12-31T23:59:59-01:00"), None);
    assert_eq!(parse("9999-12-31T23:30:00-0100"), None);
    assert_eq!(
        parse("9999-12-31T22:59:59.999-01:00"),
        Some(utc(9999, 12, 31, 23, 59, 59, 999_000_000))
    );
    assert_eq!(
        parse("9999-12-31T23:59:59.999Z"),
        Some(utc(9999, 12, 31, 23, 59, 59, 999_000_000))
    );
}

#[test]
fn refuses_offsets_that_move_the_utc_instant_before_year_0000() {
    assert_eq!(parse("0000-01-01T00:00:00+01:00"), None);
    assert_eq!(parse("0000-01-01T00:59:59+01"), None);
    assert_eq!(
        parse("0000-01-01T01:00:00+01:00"),
        Some(utc(0, 1, 1, 0, 0, 0, 0))
    );
    assert_eq!(
        parse("0000-01-01T00:00:00Z"),
        Some(utc(0, 1, 1, 0, 0, 0, 0))
    );
}

#[test]
fn every_parsed_instant_formats_as_a_four_digit_year_that_parses_back() {
    for text in [
        "0000-01-01T00:00:00Z",
        "0000-01-01T12:00:00+11:59",
        "9999-12-31T23:59:59.999Z",
        "9999-12-31T00:00:00-23:59",
    ] {
        let t = parse(text).expect("in range");
        let rendered = format(&t);
        assert_eq!(rendered.len(), "0000-01-01T00:00:00.000Z".len(), "{text}");
        assert_eq!(parse(&rendered), Some(t), "{text}");
    }
}
