//! `[routes.decthings]`, `[routes.sagemaker]`, `allow_control` and
//! Decthings type names in tensor rules.

use std::collections::{BTreeMap, BTreeSet};

use super::*;
use crate::tensor::{DataType, DecthingsType};

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn frontend_defaults() {
    let c = load(&route(""));
    let r = &c.routes[0];
    assert_eq!(r.decthings, DecthingsRoute::default());
    assert!(r.decthings.enabled);
    assert_eq!(r.decthings.prefix, "/v0");
    assert_eq!(r.decthings.multiple_tensors, MultipleTensors::Stack);
    assert!(r.decthings.unstack_outputs.is_empty() && r.decthings.model_ids.is_empty());
    assert_eq!(r.sagemaker, SageMakerRoute::default());
    assert!(r.sagemaker.enabled);
    assert_eq!(r.sagemaker.batch_records, 1024);
    assert_eq!(r.sagemaker.max_batches_in_flight, 2);
    assert_eq!(
        (
            r.sagemaker.default_model.as_ref(),
            r.sagemaker.input.as_ref()
        ),
        (None, None)
    );
    assert_eq!(r.sagemaker.datatype, None);
    assert!(r.sagemaker.endpoints.is_empty() && r.sagemaker.outputs.is_empty());
    assert!(r.allow_control.is_empty());
}

#[test]
fn decthings_values() {
    let c = load(&route(
        "[routes.decthings]\nenabled = false\nprefix = \"/api/decthings/v0\"\n\
         multiple_tensors = \"reject\"\nunstack_outputs = [\"OUT\"]\n\
         [routes.decthings.model_ids]\n\"6f1b-id\" = \"m2\"\n",
    ));
    let d = &c.routes[0].decthings;
    assert!(!d.enabled);
    assert_eq!(d.prefix, "/api/decthings/v0");
    assert_eq!(d.multiple_tensors, MultipleTensors::Reject);
    assert_eq!(d.unstack_outputs, ["OUT"]);
    assert_eq!(d.model_ids, map(&[("6f1b-id", "m2")]));
}

#[test]
fn decthings_invalid_values() {
    for prefix in ["v0", "/v0/", "/", "/v 0", "/v0?x", "/v0#x", ""] {
        let text = route(&format!("[routes.decthings]\nprefix = {prefix:?}\n"));
        let expected = format!(
            "routes[0].decthings.prefix: {prefix:?} must start with '/', not end with '/', \
             and hold no '?', '#' or whitespace"
        );
        assert_eq!(errors(&text), [expected]);
    }
    check(
        &route(
            "[routes.decthings]\nenabled = \"yes\"\nmultiple_tensors = \"concat\"\n\
             unstack_outputs = \"OUT\"\n[routes.decthings.model_ids]\nid1 = \"other\"\nid2 = 7\n",
        ),
        &[
            "routes[0].decthings.enabled: invalid type: string \"yes\", expected a boolean",
            "routes[0].decthings.multiple_tensors: unknown variant `concat`, expected `stack` or `reject`",
            "routes[0].decthings.unstack_outputs: invalid type: string \"OUT\", expected a sequence",
            "routes[0].decthings.model_ids.id2: invalid type: integer `7`, expected a non-empty string",
            "routes[0].decthings.model_ids.id1: model \"other\" is not one of this route's models (m1, m2)",
        ],
    );
}

#[test]
fn sagemaker_values() {
    let c = load(&route(
        "[routes.sagemaker]\nenabled = false\ndefault_model = \"m1\"\ninput = \"INPUT0\"\n\
         datatype = \"f64\"\nbatch_records = 10\nmax_batches_in_flight = 1\n\
         [routes.sagemaker.endpoints]\nkmeans-prod = \"m2\"\n\
         [[routes.sagemaker.outputs]]\nname = \"score\"\nrename = \"closest_cluster\"\n\
         [[routes.sagemaker.outputs]]\nname = \"distance\"\n",
    ));
    let s = &c.routes[0].sagemaker;
    assert!(!s.enabled);
    assert_eq!(s.default_model.as_deref(), Some("m1"));
    assert_eq!(s.input.as_deref(), Some("INPUT0"));
    assert_eq!(s.datatype, Some(DataType::F64));
    assert_eq!((s.batch_records, s.max_batches_in_flight), (10, 1));
    assert_eq!(s.endpoints, map(&[("kmeans-prod", "m2")]));
    let outputs = vec![
        SageMakerOutput {
            name: "score".into(),
            rename: Some("closest_cluster".into()),
        },
        SageMakerOutput {
            name: "distance".into(),
            rename: None,
        },
    ];
    assert_eq!(s.outputs, outputs);
    assert_eq!(s.outputs[0].reply_name(), "closest_cluster");
    assert_eq!(s.outputs[1].reply_name(), "distance");
    for (name, dtype) in [
        ("FP32", DataType::F32),
        ("uint16", DataType::U16),
        ("i8", DataType::I8),
    ] {
        let c = load(&route(&format!(
            "[routes.sagemaker]\ndatatype = {name:?}\n"
        )));
        assert_eq!(c.routes[0].sagemaker.datatype, Some(dtype), "{name}");
    }
}

#[test]
fn sagemaker_invalid_values() {
    let types = "FP32, FP64, INT8, INT16, INT32, INT64, UINT8, UINT16, UINT32, UINT64 (or f32, i32, u8, ...)";
    check(
        &route(
            "[routes.sagemaker]\ndefault_model = \"other\"\ninput = \"\"\ndatatype = \"BYTES\"\n\
             batch_records = 0\nmax_batches_in_flight = \"2\"\n\
             [routes.sagemaker.endpoints]\n\"bad/name\" = \"m1\"\n\"-x\" = \"m1\"\nok = \"zzz\"\n\
             [[routes.sagemaker.outputs]]\nname = \"a\"\n\
             [[routes.sagemaker.outputs]]\nrename = \"b\"\n\
             [[routes.sagemaker.outputs]]\nname = \"a\"\n\
             [[routes.sagemaker.outputs]]\nname = \"c\"\nrename = \"a\"\n\
             [[routes.sagemaker.outputs]]\nname = \"d\"\nextra = 1\n",
        ),
        &[
            "routes[0].sagemaker.input: must not be empty",
            &format!("routes[0].sagemaker.datatype: \"BYTES\" is not one of {types}"),
            "routes[0].sagemaker.batch_records: must be positive, got 0",
            "routes[0].sagemaker.max_batches_in_flight: invalid type: string \"2\", expected a positive integer",
            "routes[0].sagemaker.endpoints.bad/name: \"bad/name\" is not a SageMaker endpoint name (1-63 letters, digits and '-', not at either end)",
            "routes[0].sagemaker.endpoints.-x: \"-x\" is not a SageMaker endpoint name (1-63 letters, digits and '-', not at either end)",
            "routes[0].sagemaker.outputs[4].extra: unknown key `extra`, expected `name` or `rename`",
            "routes[0].sagemaker.default_model: model \"other\" is not one of this route's models (m1, m2)",
            "routes[0].sagemaker.endpoints.ok: model \"zzz\" is not one of this route's models (m1, m2)",
            "routes[0].sagemaker.outputs[1].name: required",
            "routes[0].sagemaker.outputs[2].name: output \"a\" is already listed at routes[0].sagemaker.outputs[0]",
            "routes[0].sagemaker.outputs[3].rename: reply name \"a\" is already used by routes[0].sagemaker.outputs[0]",
        ],
    );
}

#[test]
fn default_route_may_name_any_model() {
    let c = load(&route(
        "[[routes]]\nname = \"d\"\ndefault = true\nbackend = \"b\"\n\
         [routes.sagemaker]\ndefault_model = \"rowsum\"\n[routes.sagemaker.endpoints]\ne = \"x\"\n\
         [routes.decthings.model_ids]\nid = \"y\"\n",
    ));
    let d = &c.routes[1];
    assert_eq!(d.sagemaker.default_model.as_deref(), Some("rowsum"));
    assert_eq!(d.sagemaker.endpoints, map(&[("e", "x")]));
    assert_eq!(d.decthings.model_ids, map(&[("id", "y")]));
}

#[test]
fn frontend_names_are_unique_across_routes() {
    let second = "[[routes]]\nname = \"s\"\nmodels = [\"m3\"]\nbackend = \"b\"\n\
        [routes.sagemaker]\ndefault_model = \"m3\"\n[routes.sagemaker.endpoints]\ne1 = \"m3\"\n\
        [routes.decthings.model_ids]\nid1 = \"m3\"\n";
    let first = "[routes.sagemaker]\ndefault_model = \"m1\"\n[routes.sagemaker.endpoints]\ne1 = \"m1\"\n\
        [routes.decthings.model_ids]\nid1 = \"m2\"\n";
    check(
        &format!("{}{second}", route(first)),
        &[
            "routes[1].decthings.model_ids.id1: modelId \"id1\" is already mapped by route \"r\"",
            "routes[1].sagemaker.endpoints.e1: endpoint \"e1\" is already served by route \"r\"",
            "routes[1].sagemaker.default_model: route \"r\" (routes[0]) already sets the SageMaker default model; only one route may",
        ],
    );
}

#[test]
fn allow_control() {
    let c = load(&route(
        "allow_control = [\"repository\", \"trace\", \"repository\"]\n",
    ));
    let expected = BTreeSet::from([Control::Repository, Control::Trace]);
    assert_eq!(c.routes[0].allow_control, expected);
    let c = load(&route("allow_control = [\"shared_memory\", \"logging\"]\n"));
    let expected = BTreeSet::from([Control::SharedMemory, Control::Logging]);
    assert_eq!(c.routes[0].allow_control, expected);
    check(
        &route("allow_control = [\"repository\", \"models\", 3]\n"),
        &[
            "routes[0].allow_control[1]: unknown variant `models`, expected one of `repository`, `shared_memory`, `logging`, `trace`",
            "routes[0].allow_control[2]: invalid type: integer `3`, expected a string",
        ],
    );
    check(
        &route("allow_control = \"all\"\n"),
        &["routes[0].allow_control: invalid type: string \"all\", expected a sequence"],
    );
}

#[test]
fn tensor_rules_keep_decthings_names() {
    let c = load(&route(
        "[routes.inputs.A]\nallowed_types = [\"image\", \"string\", \"BYTES\", \"image\"]\n\
         [routes.inputs.B]\nallowed_types = [\"f32\", \"INT32\"]\n\
         [routes.outputs.C]\nallowed_types = [\"binary\", \"video\", \"audio\"]\n",
    ));
    let rules = &c.routes[0].rules;
    let a = &rules.inputs["A"];
    assert_eq!(a.allowed_types, Some(vec![DataType::Bytes]));
    let expected = vec![DecthingsType::Image, DecthingsType::String];
    assert_eq!(a.decthings_types, Some(expected));
    let b = &rules.inputs["B"];
    assert_eq!(b.allowed_types, Some(vec![DataType::F32, DataType::I32]));
    assert_eq!(b.decthings_types, None);
    let expected = vec![
        DecthingsType::Binary,
        DecthingsType::Video,
        DecthingsType::Audio,
    ];
    assert_eq!(rules.outputs["C"].decthings_types, Some(expected));
    check(
        &route("[routes.inputs.A]\nallowed_types = []\n"),
        &["routes[0].inputs.A.allowed_types: lists no data type (omit the key to allow any)"],
    );
}

/// Two required inputs, INT32 `[-1, 16]`, as Triton's `simple`.
const TWO_INPUTS: &str = "[routes.inputs.INPUT0]\nshape = [-1, 16]\nallowed_types = [\"INT32\"]\n\
     [routes.inputs.INPUT1]\nshape = [-1, 16]\nallowed_types = [\"i32\"]\n";

#[test]
fn sagemaker_mapping_the_rules_refuse_is_an_error() {
    // The example configuration's old mistake: SageMaker sends INPUT0 alone
    // to a route that requires INPUT1 too.
    check(
        &route(&format!(
            "{TWO_INPUTS}[routes.sagemaker]\ndefault_model = \"m1\"\ninput = \"INPUT0\"\n\
             datatype = \"INT32\"\n"
        )),
        &[
            "routes[0].sagemaker.input: a SageMaker request carries only input \"INPUT0\", \
           but the route also requires INPUT1 (routes[0].inputs): every SageMaker request \
           would be refused (400)",
        ],
    );
    // An input the rules do not know, on a route refusing unknown inputs
    // (and requiring another).
    check(
        &route(
            "[routes.inputs.INPUT0]\nshape = [-1, 16]\n\
             [routes.inputs.INPUT1]\nrequired = false\n\
             [routes.sagemaker]\ninput = \"X\"\n",
        ),
        &[
            "routes[0].sagemaker.input: a SageMaker request carries only input \"X\", but the \
             route also requires INPUT0 (routes[0].inputs): every SageMaker request would be \
             refused (400)",
            "routes[0].sagemaker.input: input \"X\" is not one of the route's inputs \
             (INPUT0, INPUT1): every SageMaker request would be refused (400)",
        ],
    );
    // A type the rule does not allow, and a shape of another rank.
    check(
        &route(
            "[routes.inputs.INPUT0]\nshape = [-1]\nallowed_types = [\"INT32\"]\n\
             [routes.sagemaker]\ninput = \"INPUT0\"\ndatatype = \"FP32\"\n",
        ),
        &[
            "routes[0].sagemaker.datatype: FP32 is not among the types \
             routes[0].inputs.INPUT0.allowed_types allows (INT32): every SageMaker request \
             would be refused (400)",
            "routes[0].sagemaker.input: SageMaker records are a [records, features] tensor, \
             and routes[0].inputs.INPUT0.shape is [-1]: every SageMaker request would be \
             refused (400)",
        ],
    );
    // No input named, two required: none could be the one it sends.
    check(
        &route(&format!(
            "{TWO_INPUTS}[routes.sagemaker.endpoints]\nprod = \"m1\"\n"
        )),
        &[
            "routes[0].sagemaker: the route requires inputs INPUT0, INPUT1 (routes[0].inputs), \
           but a SageMaker request carries one input: every SageMaker request would be refused \
           (400); set enabled = false or map it to a route with one input",
        ],
    );
}

#[test]
fn sagemaker_mappings_the_rules_allow_load() {
    // The frontend left on by default maps nothing: no error.
    load(&route(TWO_INPUTS));
    // Turned off: whatever it says.
    load(&route(&format!(
        "{TWO_INPUTS}[routes.sagemaker]\nenabled = false\ninput = \"INPUT0\"\n"
    )));
    // One input, the right type and rank; optional others do not matter.
    load(&route(
        "[routes.inputs.INPUT0]\nshape = [-1, -1]\nallowed_types = [\"FP32\"]\n\
         [routes.inputs.EXTRA]\nrequired = false\n\
         [routes.sagemaker]\ninput = \"INPUT0\"\ndatatype = \"f32\"\ndefault_model = \"m1\"\n",
    ));
    // No rules at all.
    load(&route(
        "[routes.sagemaker]\ninput = \"anything\"\ndatatype = \"INT64\"\n",
    ));
}
