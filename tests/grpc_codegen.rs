//! The committed gRPC code is what `proto/` generates.
//!
//! The messages (prost, in the codec crate) and the services (tonic, in
//! the demo crate's `src/grpc/`) are generated from `proto/` and committed,
//! so that building tensorgate needs neither `protoc` nor a code generator,
//! and a change of generated code shows in review. This test generates both again with
//! protox (a protobuf compiler in Rust) and the same prost / tonic
//! generators, and fails when a committed file differs: after editing a
//! `.proto` file, or after a prost / tonic upgrade that changes their
//! output, run
//!
//! ```sh
//! TENSORGATE_REGENERATE_GRPC=1 cargo test --test grpc_codegen
//! ```
//!
//! and commit the files it writes.
//!
//! The codec crate also holds the messages' descriptors
//! (`descriptors.bin`, a `FileDescriptorSet` without source info): its
//! JSON mappings (Triton's HTTP forms of the metadata messages) read field
//! names and types from them.

use std::fs;
use std::path::{Path, PathBuf};

/// The `.proto` files compiled, relative to `proto/` (their imports follow).
const PROTOS: [&str; 2] = [
    "inference/grpc_service.proto",
    "grpc/health/v1/health.proto",
];

/// Where the messages go: the codec crate, which has no tokio.
const MESSAGES_DIR: &str = "crates/codec/src/codec/grpc/generated";
/// Where the tonic services and clients go, naming the codec crate's
/// messages: the demo crate, whose gRPC server and the tests' clients are
/// their only users.
const SERVICES_DIR: &str = "crates/demo/src/grpc/generated";

/// The generated files, by name: `inference.rs` and `grpc.health.v1.rs`.
const FILES: [&str; 2] = ["inference.rs", "grpc.health.v1.rs"];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The descriptor set the codec crate embeds, beside the messages.
const DESCRIPTORS: &str = "descriptors.bin";

/// Generates messages, their descriptors and services into `messages` and
/// `services`.
fn generate(messages: &Path, services: &Path) {
    let fds = protox::compile(PROTOS, [root().join("proto")]).expect("proto/ compiles");
    let mut compiler = protox::Compiler::new([root().join("proto")]).expect("proto/ is readable");
    compiler
        .include_source_info(false)
        .include_imports(true)
        .open_files(PROTOS)
        .expect("proto/ compiles");
    fs::write(
        messages.join(DESCRIPTORS),
        compiler.encode_file_descriptor_set(),
    )
    .expect("write descriptors");
    prost_build::Config::new()
        // Every `bytes` field a `Bytes`: decoding a `Bytes` buffer yields
        // slices of it, so tensor data is never copied.
        .bytes(["."])
        // Maps encode in key order: the same message, the same bytes.
        .btree_map(["."])
        .out_dir(messages)
        .compile_fds(fds.clone())
        .expect("messages generate");
    tonic_prost_build::configure()
        .build_server(true)
        .build_client(true)
        .extern_path(
            ".inference",
            "::tensorgate_codec::codec::grpc::proto::inference",
        )
        .extern_path(
            ".grpc.health.v1",
            "::tensorgate_codec::codec::grpc::proto::health",
        )
        .out_dir(services)
        .compile_fds(fds)
        .expect("services generate");
}

fn fresh_dir(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).expect("temporary directory");
    dir
}

#[test]
fn committed_grpc_code_is_current() {
    let messages = fresh_dir("grpc_codegen_messages");
    let services = fresh_dir("grpc_codegen_services");
    generate(&messages, &services);
    let regenerate = std::env::var_os("TENSORGATE_REGENERATE_GRPC").is_some();
    let mut stale = Vec::new();
    for (generated, committed) in [(&messages, MESSAGES_DIR), (&services, SERVICES_DIR)] {
        let descriptors = (committed == MESSAGES_DIR).then_some(DESCRIPTORS);
        for file in FILES.into_iter().chain(descriptors) {
            let new = fs::read(generated.join(file)).expect("generated file");
            let path = root().join(committed).join(file);
            if fs::read(&path).ok().as_deref() == Some(new.as_slice()) {
                continue;
            }
            if regenerate {
                fs::write(&path, new).expect("write generated file");
            } else {
                stale.push(format!("{committed}/{file}"));
            }
        }
    }
    assert!(
        stale.is_empty(),
        "generated gRPC code is stale: {stale:?}; run \
         TENSORGATE_REGENERATE_GRPC=1 cargo test --test grpc_codegen and commit the result"
    );
}
