use super::*;

#[test]
fn accents_are_folded_into_the_letters_they_mark() {
    assert_eq!(snake_case("Käufer über 18"), "kaufer_uber_18");
    assert_eq!(snake_case("Été Users"), "ete_users");
    assert_eq!(snake_case("ÀLL CAPS ÜBER"), "all_caps_uber");
    assert_eq!(snake_case("Crème Brûlée Fans"), "creme_brulee_fans");
    // A mark written as its own character (decomposed input) joins too.
    assert_eq!(snake_case("E\u{301}te\u{301} Users"), "ete_users");
}

#[test]
fn letters_without_a_decomposition_are_spelled_out() {
    assert_eq!(snake_case("Straße Kunden"), "strasse_kunden");
    assert_eq!(snake_case("Ærø Øl"), "aero_ol");
    assert_eq!(snake_case("ÆTHER"), "aether");
    assert_eq!(snake_case("Łódź"), "lodz");
    // Compatibility forms read as the letters they stand for.
    assert_eq!(snake_case("ﬁnance"), "finance");
}

#[test]
fn words_split_at_case_changes_as_lodash_and_inflection_do() {
    assert_eq!(snake_case("High Value Users!"), "high_value_users");
    assert_eq!(snake_case("ordersCount"), "orders_count");
    assert_eq!(snake_case("HTTPServer Users"), "http_server_users");
    assert_eq!(snake_case("V2 Users"), "v2_users");
    assert_eq!(snake_case("Users2Go"), "users2_go");
    assert_eq!(snake_case("HTTP2Server"), "http2_server");
    assert_eq!(snake_case("Don't Email"), "dont_email");
    assert_eq!(snake_case("  --a  b-- "), "a_b");
}

#[test]
fn other_scripts_separate_and_give_no_key_alone() {
    assert_eq!(snake_case("VIP 顧客 List"), "vip_list");
    assert_eq!(derive_key("顧客"), Err(KeyError::NoLetterFirst));
    assert_eq!(derive_key("18 Plus"), Err(KeyError::NoLetterFirst));
}

#[test]
fn a_long_name_is_refused_for_the_length_of_its_key() {
    let name = "a".repeat(150);
    assert_eq!(derive_key(&name), Err(KeyError::TooLong(150)));
    let message = KeyError::TooLong(150).to_string();
    assert!(message.contains("150 characters"), "{message}");
    assert!(message.contains("100"), "{message}");
    assert!(message.contains("`key`"), "{message}");
    assert!(!message.contains("start with a letter"), "{message}");
    assert_eq!(derive_key(&"a".repeat(100)), Ok("a".repeat(100)));
}

#[test]
fn given_keys_must_already_be_snake_case() {
    assert!(is_snake_case("orders_7d"));
    assert!(!is_snake_case("Orders"));
    assert!(!is_snake_case("7d"));
    assert!(!is_snake_case(&"a".repeat(101)));
}
