//! The Decthings frontend's request path, without the network: an
//! arbitrary `Model.evaluate` body is framed, its JSON read, and its
//! parameters turned into V2 inputs under a route with rules, the way the
//! gateway does it. Nothing may panic; every refusal is an error value.
#![no_main]

use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use tensorgate::config::{Backend, Route};
use tensorgate::frontend::decthings::request;
use tensorgate::rules::{ShapeRule, TensorRule};
use tensorgate::tensor::{DataType, DecthingsType};

fn route() -> &'static Route {
    static ROUTE: OnceLock<Route> = OnceLock::new();
    ROUTE.get_or_init(|| {
        let backend = Backend::new("b", "http://127.0.0.1:1".parse().unwrap());
        let mut r = Route::new("r", Arc::new(backend));
        r.limits.max_body_bytes = 1 << 20;
        r.rules.inputs.insert(
            "x".into(),
            TensorRule {
                shape: Some(ShapeRule(vec![-1, 4])),
                allowed_types: Some(vec![DataType::F32, DataType::F16]),
                decthings_types: None,
                required: false,
            },
        );
        r.rules.inputs.insert(
            "m".into(),
            TensorRule {
                shape: None,
                allowed_types: None,
                decthings_types: Some(vec![DecthingsType::Image]),
                required: false,
            },
        );
        r
    })
}

fuzz_target!(|data: &[u8]| {
    let body = Bytes::copy_from_slice(data);
    if let Ok(call) = request::parse(&body) {
        let _ = request::to_inputs(route(), call.params);
    }
});
