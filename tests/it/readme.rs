//! The README's Rust fragment compiles: it is, word for word, the part of
//! `examples/decthings_client.rs` between its `README` markers (that
//! example is built by every `cargo test --all-targets` and run against a
//! gateway by examples/run.sh). An earlier fragment used an undefined
//! `params`; this test fails when the two drift apart.

fn read(path: &str) -> String {
    let full = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()))
}

/// The lines between `// README: begin` and `// README: end`, with the
/// function body's four-space indent removed.
fn example_excerpt() -> String {
    let example = read("examples/decthings_client.rs");
    let (_, rest) = example
        .split_once("    // README: begin\n")
        .expect("a begin marker");
    let (body, _) = rest
        .split_once("    // README: end\n")
        .expect("an end marker");
    body.lines()
        .map(|l| l.strip_prefix("    ").unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every ```rust block of the README.
fn readme_rust_blocks() -> Vec<String> {
    let readme = read("README.md");
    let mut blocks = Vec::new();
    let mut rest = readme.as_str();
    while let Some((_, after)) = rest.split_once("```rust\n") {
        let (block, tail) = after.split_once("```").expect("a closed block");
        blocks.push(block.trim_end().to_owned());
        rest = tail;
    }
    blocks
}

#[test]
fn readme_rust_fragment_is_the_example() {
    let blocks = readme_rust_blocks();
    assert_eq!(
        blocks.len(),
        1,
        "the README has one Rust fragment: {blocks:#?}"
    );
    assert_eq!(blocks[0], example_excerpt().trim_end());
}
