//! Error collection: every error at once, with its key, in file order.

use super::*;

#[test]
fn two_type_errors_and_more_at_once() {
    check(
        &format!(
            "[server]\nmax_concurrent_requests = \"many\"\n[limits]\nmax_dims = \"3\"\n{}",
            route("backend_format = 1\n[routes.limits]\nmax_dims = 99\n")
        ),
        &[
            "server.max_concurrent_requests: invalid type: string \"many\", expected a positive integer",
            "limits.max_dims: invalid type: string \"3\", expected a positive integer",
            "routes[0].backend_format: invalid type: integer `1`, expected a string",
            "routes[0].limits.max_dims: at most 64, got 99",
        ],
    );
}

#[test]
fn unknown_keys_at_every_level() {
    let text = format!(
        "colour = 1\n[server]\nport = 1\n[limits]\nmax_bytes = 1\n{}",
        route(
            "model = \"x\"\n[routes.limits]\nmax_dim = 1\n[routes.inputs.X]\ntype = \"FP32\"\n\
             [routes.decthings]\nprefx = \"/v0\"\n[routes.sagemaker]\nendpoint = \"e\"\n",
        )
        .replace("[[routes]]", "timeout = \"1s\"\n[[routes]]")
    );
    let errors = errors(&text);
    let expected = [
        "colour: unknown key `colour`, expected one of `server`, `limits`, `backends`, `routes`",
        "server.port: unknown key `port`, expected one of `listen`, `admin_listen`, ",
        "limits.max_bytes: unknown key `max_bytes`, expected one of `max_body_bytes`, ",
        "backends.b.timeout: unknown key `timeout`, expected one of `url`, `urls`, `dns`, ",
        "routes[0].model: unknown key `model`, expected one of `name`, `models`, ",
        "routes[0].limits.max_dim: unknown key `max_dim`, expected one of `max_body_bytes`, ",
        "routes[0].inputs.X.type: unknown key `type`, expected one of `shape`, `allowed_types`, `required`",
        "routes[0].decthings.prefx: unknown key `prefx`, expected one of `enabled`, `prefix`, ",
        "routes[0].sagemaker.endpoint: unknown key `endpoint`, expected one of `enabled`, `default_model`, ",
    ];
    assert_eq!(errors.len(), expected.len(), "{errors:#?}");
    for (got, want) in errors.iter().zip(expected) {
        assert!(got.starts_with(want), "{got:?} should start with {want:?}");
    }
}

#[test]
fn unknown_key_lists_every_expected_key() {
    let errors = errors(&route("[routes.sagemaker]\nfoo = 1\n"));
    assert_eq!(
        errors,
        [
            "routes[0].sagemaker.foo: unknown key `foo`, expected one of `enabled`, `default_model`, \
          `input`, `datatype`, `batch_records`, `max_batches_in_flight`, `endpoints`, `outputs`"
        ]
    );
}

#[test]
fn indices_stay_the_files_after_bad_elements() {
    // Inline routes: the first two are not tables, so they are cut out; the
    // errors of the third still name routes[2], in stage 1 and stage 2.
    let text = "routes = [1, \"x\", { name = \"r\", models = [2, \"\", \"m\", 3], backend = \"nope\", extra = 0 }]\n\
        [backends.b]\nurl = \"http://127.0.0.1:1\"\n";
    check(
        text,
        &[
            "routes[0]: invalid type: integer `1`, expected a table",
            "routes[1]: invalid type: string \"x\", expected a table",
            "routes[2].models[0]: invalid type: integer `2`, expected a non-empty string",
            "routes[2].models[1]: must not be empty",
            "routes[2].models[3]: invalid type: integer `3`, expected a non-empty string",
            "routes[2].extra: unknown key `extra`, expected one of `name`, `models`, `default`, `backend`, \
             `backends`, `allow_backend_header`, `shadow`, `retry_infer`, `backend_format`, `limits`, `inputs`, `outputs`, `allow_unknown_inputs`, `allow_control`, \
             `decthings`, `sagemaker`, `auth`, `rate_limit`",
            "routes[2].backend: unknown backend \"nope\" (defined: b)",
        ],
    );
}

#[test]
fn a_reported_key_is_not_reported_again() {
    // `url` and `name` have type errors; stage 2 does not add "required",
    // nor "unknown backend" for the declared backend `b`.
    check(
        "[backends.b]\nurl = 1\n[[routes]]\nname = 2\nmodels = [\"m\"]\nbackend = \"b\"\n",
        &[
            "backends.b.url: invalid type: integer `1`, expected an http(s)://host:port URL",
            "routes[0].name: invalid type: integer `2`, expected a non-empty string",
        ],
    );
    // A bad URL is reported once, at its key; a name no table declares
    // still is an unknown backend.
    check(
        "[backends.triton]\nurl = \"htp:/x\"\n[[routes]]\nname = \"a\"\nmodels = [\"m\"]\n\
         backend = \"triton\"\n[[routes]]\nname = \"b\"\nmodels = [\"n\"]\nbackend = \"nope\"\n",
        &[
            "backends.triton.url: \"htp:/x\" is not an http://host:port, https://host:port, grpc://host:port or grpcs://host:port URL",
            "routes[1].backend: unknown backend \"nope\" (no usable backend is defined)",
        ],
    );
    check(
        "[backends.b]\n[[routes]]\nmodels = [\"m\"]\n",
        &[
            "backends.b.url: required: one of url, urls or dns",
            "routes[0].name: required",
            "routes[0].backend: required",
        ],
    );
}

#[test]
fn wrong_table_types() {
    check(
        "server = 1\nlimits = []\nbackends = \"b\"\nroutes = 2\n",
        &[
            "server: invalid type: integer `1`, expected a table",
            "limits: invalid type: sequence, expected a table",
            "backends: invalid type: string \"b\", expected a map",
            "routes: invalid type: integer `2`, expected a sequence",
        ],
    );
}

#[test]
fn stops_after_many_errors() {
    let text: String = (0..150).map(|i| format!("k{i} = 1\n")).collect();
    let errors = errors(&text);
    assert_eq!(errors.len(), 101);
    assert!(
        errors[0].starts_with("k0: unknown key `k0`"),
        "{}",
        errors[0]
    );
    assert_eq!(errors[100], "stopped after 100 errors");
}
