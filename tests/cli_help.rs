//! What `tensorgate --help` tells a new user holds: `demo-backend`'s help
//! lists every model the embedded demo serves (it once left out `rowsum`,
//! the SageMaker model), and each one it lists answers `ready`.

mod common;

use clap::CommandFactory;
use tensorgate::cli::Cli;

/// The models named in `demo-backend`'s one-line help: "(models a, b, c)".
fn models_in_help() -> Vec<String> {
    let cli = Cli::command();
    let sub = cli
        .get_subcommands()
        .find(|c| c.get_name() == "demo-backend")
        .expect("a demo-backend subcommand");
    let about = sub.get_about().expect("help text").to_string();
    let list = about
        .split_once("(models ")
        .and_then(|(_, rest)| rest.split_once(')'))
        .map(|(list, _)| list.to_owned())
        .unwrap_or_else(|| panic!("no model list in {about:?}"));
    list.split(',').map(|m| m.trim().to_owned()).collect()
}

#[tokio::test]
async fn demo_backend_help_lists_the_models_it_serves() {
    let models = models_in_help();
    assert_eq!(models, ["simple", "identity", "repeat", "ramp", "rowsum"]);
    let demo = tensorgate_demo::spawn().await.unwrap();
    for m in &models {
        let got = common::send(demo.addr, "GET", &format!("/v2/models/{m}/ready"), &[], "").await;
        assert_eq!(got.status, 200, "model {m}");
    }
    let got = common::send(demo.addr, "GET", "/v2/models/nope/ready", &[], "").await;
    assert_ne!(got.status, 200, "a model the demo does not have");
}
