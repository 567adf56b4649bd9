//! Ports of printers.go for services, endpoints, endpoint slices,
//! ingresses and ingress classes, service CIDRs and IP addresses.

use super::fields::{arr, at, created, int, name, s, RowFn};
use crate::encode::print::row::RowBuilder;
use serde_json::Value;
use std::collections::BTreeSet;

/// v1.36 serves endpoint slices at discovery.k8s.io/v1, printed as
/// v1beta1's were, and service CIDRs and IP addresses, which v1.20 did not
/// have. Ingress classes print as v1.20 printed them.
pub fn lookup_v1_36(group: &str, version: &str, resource: &str) -> Option<RowFn> {
    match (group, version, resource) {
        ("discovery.k8s.io", "v1", "endpointslices") => Some(endpoint_slice),
        ("networking.k8s.io", "v1", "servicecidrs") => Some(service_cidr),
        ("networking.k8s.io", "v1", "ipaddresses") => Some(ip_address),
        _ => None,
    }
}

/// `printServiceCIDR`: the CIDRs joined with ",".
fn service_cidr(c: &Value, r: &mut RowBuilder) {
    r.str(name(c))
        .str(&strs(c, &["spec", "cidrs"]).join(","))
        .since_field(created(c));
}

/// `printIPAddress`: the parent as the lower-cased group resource
/// (`resource.group`, or the resource alone in the core group), its
/// namespace if it has one, and its name ("<none>" without a parent).
/// printers.go appends the age too, though the printer defines no column
/// for it: its rows have one cell more than its columns, as here.
fn ip_address(a: &Value, r: &mut RowBuilder) {
    let parent = match at(a, &["spec", "parentRef"]).filter(|p| !p.is_null()) {
        Some(p) => {
            let (group, resource) = (s(p, &["group"]), s(p, &["resource"]));
            let gr = if group.is_empty() {
                resource.to_string()
            } else {
                format!("{resource}.{group}")
            };
            let mut out = crate::go::strings::to_lower(&gr);
            let namespace = s(p, &["namespace"]);
            if !namespace.is_empty() {
                out.push('/');
                out.push_str(namespace);
            }
            out.push('/');
            out.push_str(s(p, &["name"]));
            out
        }
        None => "<none>".into(),
    };
    r.str(name(a)).str(&parent).since_field(created(a));
}

pub fn lookup(group: &str, version: &str, resource: &str) -> Option<RowFn> {
    Some(match (group, version, resource) {
        ("", "v1", "services") => service,
        ("", "v1", "endpoints") => endpoints,
        ("discovery.k8s.io", "v1beta1", "endpointslices") => endpoint_slice,
        // Every version's JSON names the fields the printer reads (class
        // name, rules' hosts, TLS, load balancer status) alike.
        ("networking.k8s.io", "v1" | "v1beta1", "ingresses")
        | ("extensions", "v1beta1", "ingresses") => ingress,
        ("networking.k8s.io", "v1" | "v1beta1", "ingressclasses") => ingress_class,
        _ => return None,
    })
}

/// A string the printer shows as `<none>` when empty.
fn or_none(v: &str) -> &str {
    if v.is_empty() {
        "<none>"
    } else {
        v
    }
}

/// The strings of an array field.
fn strs<'a>(v: &'a Value, path: &[&str]) -> Vec<&'a str> {
    arr(v, path)
        .iter()
        .map(|x| x.as_str().unwrap_or(""))
        .collect()
}

/// `loadBalancerStatusStringer` (wide): the ingress points' IPs, or
/// hostnames when they have none, sorted and without duplicates.
fn load_balancer_status(lb: Option<&Value>) -> String {
    let mut set = BTreeSet::new();
    for i in lb.map_or(&[][..], |lb| arr(lb, &["ingress"])) {
        let (ip, host) = (s(i, &["ip"]), s(i, &["hostname"]));
        if !ip.is_empty() {
            set.insert(ip);
        } else if !host.is_empty() {
            set.insert(host);
        }
    }
    set.into_iter().collect::<Vec<_>>().join(",")
}

/// `labels.FormatLabels`: `k=v` sorted by key, `<none>` for none.
fn format_labels(m: Option<&Value>) -> String {
    let Some(Value::Object(m)) = m else {
        return "<none>".into();
    };
    let sorted: BTreeSet<(&str, &str)> = m
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str().unwrap_or("")))
        .collect();
    let l: Vec<String> = sorted.iter().map(|(k, v)| format!("{k}={v}")).collect();
    or_none(&l.join(",")).to_string()
}

/// `getServiceExternalIP` (wide).
fn service_external_ip(svc: &Value) -> String {
    let external = strs(svc, &["spec", "externalIPs"]);
    match s(svc, &["spec", "type"]) {
        "ClusterIP" | "NodePort" => or_none(&external.join(",")).to_string(),
        "LoadBalancer" => {
            let lb = load_balancer_status(at(svc, &["status", "loadBalancer"]));
            if !external.is_empty() {
                let mut results: Vec<&str> = Vec::new();
                if !lb.is_empty() {
                    results.extend(lb.split(','));
                }
                results.extend(external);
                return results.join(",");
            }
            if lb.is_empty() {
                "<pending>".into()
            } else {
                lb
            }
        }
        "ExternalName" => s(svc, &["spec", "externalName"]).to_string(),
        _ => "<unknown>".into(),
    }
}

/// `makePortString`: `port[:nodePort]/protocol` for each port.
fn service_ports(svc: &Value) -> String {
    let pieces: Vec<String> = arr(svc, &["spec", "ports"])
        .iter()
        .map(|p| {
            let (port, node_port, proto) = (
                int(p, &["port"]),
                int(p, &["nodePort"]),
                s(p, &["protocol"]),
            );
            if node_port > 0 {
                format!("{port}:{node_port}/{proto}")
            } else {
                format!("{port}/{proto}")
            }
        })
        .collect();
    pieces.join(",")
}

fn service(svc: &Value, r: &mut RowBuilder) {
    let cluster_ip = arr(svc, &["spec", "clusterIPs"])
        .first()
        .map_or("<none>", |ip| ip.as_str().unwrap_or(""));
    r.str(name(svc))
        .str(s(svc, &["spec", "type"]))
        .str(cluster_ip)
        .str(&service_external_ip(svc))
        .str(or_none(&service_ports(svc)))
        .since_field(created(svc))
        .str(&format_labels(at(svc, &["spec", "selector"])));
}

/// `net.JoinHostPort`: IPv6 addresses (anything with a colon) bracketed.
fn join_host_port(host: &str, port: i64) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// `formatEndpoints(endpoints, nil)`: the first three addresses (with
/// each port, for subsets that have ports) and how many more there are.
fn format_endpoints(ep: &Value) -> String {
    let subsets = arr(ep, &["subsets"]);
    if subsets.is_empty() {
        return "<none>".into();
    }
    const MAX: usize = 3;
    let mut list: Vec<String> = Vec::new();
    let mut more = false;
    let mut count = 0;
    for ss in subsets {
        let addresses = arr(ss, &["addresses"]);
        let ports = arr(ss, &["ports"]);
        if ports.is_empty() {
            // Headless services may have no ports.
            for a in addresses {
                if list.len() == MAX {
                    more = true;
                }
                if !more {
                    list.push(s(a, &["ip"]).to_string());
                }
                count += 1;
            }
        } else {
            for p in ports {
                for a in addresses {
                    if list.len() == MAX {
                        more = true;
                    }
                    if !more {
                        list.push(join_host_port(s(a, &["ip"]), int(p, &["port"])));
                    }
                    count += 1;
                }
            }
        }
    }
    let ret = list.join(",");
    if more {
        format!("{ret} + {} more...", count - MAX)
    } else {
        ret
    }
}

fn endpoints(ep: &Value, r: &mut RowBuilder) {
    r.str(name(ep))
        .str(&format_endpoints(ep))
        .since_field(created(ep));
}

/// `listWithMoreString`.
fn list_with_more(list: &[String], more: bool, count: usize, max: usize) -> String {
    let ret = list.join(",");
    if more {
        return format!("{ret} + {} more...", count - max);
    }
    if ret.is_empty() {
        "<unset>".into()
    } else {
        ret
    }
}

/// `formatDiscoveryPorts`: a port's number, else its name, else `*`.
fn discovery_ports(slice: &Value) -> String {
    const MAX: usize = 3;
    let mut list = Vec::new();
    let mut more = false;
    let mut count = 0;
    for p in arr(slice, &["ports"]) {
        if list.len() < MAX {
            let num = match (
                at(p, &["port"]).and_then(Value::as_i64),
                at(p, &["name"]).and_then(Value::as_str),
            ) {
                (Some(port), _) => port.to_string(),
                (None, Some(name)) => name.to_string(),
                (None, None) => "*".to_string(),
            };
            list.push(num);
        } else if list.len() == MAX {
            more = true;
        }
        count += 1;
    }
    list_with_more(&list, more, count, MAX)
}

/// `formatDiscoveryEndpoints`: the endpoints' first three addresses.
fn discovery_endpoints(slice: &Value) -> String {
    const MAX: usize = 3;
    let mut list = Vec::new();
    let mut more = false;
    let mut count = 0;
    for e in arr(slice, &["endpoints"]) {
        for a in arr(e, &["addresses"]) {
            if list.len() < MAX {
                list.push(a.as_str().unwrap_or("").to_string());
            } else if list.len() == MAX {
                more = true;
            }
            count += 1;
        }
    }
    list_with_more(&list, more, count, MAX)
}

fn endpoint_slice(es: &Value, r: &mut RowBuilder) {
    r.str(name(es))
        .str(s(es, &["addressType"]))
        .str(&discovery_ports(es))
        .str(&discovery_endpoints(es))
        .since_field(created(es));
}

/// `formatHosts`: the first three rules' hosts (rules without one count
/// towards the three but are not shown), `*` for none.
fn format_hosts(rules: &[Value]) -> String {
    const MAX: usize = 3;
    let mut list: Vec<&str> = Vec::new();
    let mut more = false;
    for rule in rules {
        if list.len() == MAX {
            more = true;
        }
        let host = s(rule, &["host"]);
        if !more && !host.is_empty() {
            list.push(host);
        }
    }
    if list.is_empty() {
        return "*".into();
    }
    let ret = list.join(",");
    if more {
        format!("{ret} + {} more...", rules.len() - MAX)
    } else {
        ret
    }
}

fn ingress(ing: &Value, r: &mut RowBuilder) {
    let class = at(ing, &["spec", "ingressClassName"])
        .and_then(Value::as_str)
        .unwrap_or("<none>");
    let ports = if arr(ing, &["spec", "tls"]).is_empty() {
        "80"
    } else {
        "80, 443"
    };
    r.str(name(ing))
        .str(class)
        .str(&format_hosts(arr(ing, &["spec", "rules"])))
        .str(&load_balancer_status(at(ing, &["status", "loadBalancer"])))
        .str(ports)
        .since_field(created(ing));
}

fn ingress_class(ic: &Value, r: &mut RowBuilder) {
    let parameters = match at(ic, &["spec", "parameters"]) {
        Some(p) if p.is_object() => {
            let mut out = s(p, &["kind"]).to_string();
            if let Some(group) = at(p, &["apiGroup"]).and_then(Value::as_str) {
                out.push('.');
                out.push_str(group);
            }
            out.push('/');
            out.push_str(s(p, &["name"]));
            out
        }
        _ => "<none>".into(),
    };
    r.str(name(ic))
        .str(s(ic, &["spec", "controller"]))
        .str(&parameters)
        .since_field(created(ic));
}

#[cfg(test)]
mod tests {
    //! The cases are objects made on a v1.20 kube-apiserver, with the
    //! cells it printed for them.
    use super::super::test_support::{cells, cells_as, check_as, column_count, column_count_as};
    use crate::encode::personality::Personality;
    use serde_json::{json, Value};

    const NOW: &str = "2026-01-01T01:00:00Z";
    const SERVICES: (&str, &str, &str) = ("", "v1", "services");
    const ENDPOINTS: (&str, &str, &str) = ("", "v1", "endpoints");
    const SLICES: (&str, &str, &str) = ("discovery.k8s.io", "v1beta1", "endpointslices");

    fn obj(name: &str, rest: Value) -> Value {
        let mut o =
            json!({"metadata": {"name": name, "creationTimestamp": "2026-01-01T00:59:00Z"}});
        o.as_object_mut()
            .unwrap()
            .extend(rest.as_object().unwrap().clone());
        o
    }

    /// The cells, checked to be as many as the columns.
    fn row(gvr: (&str, &str, &str), o: Value) -> String {
        let c = cells(gvr, o, NOW);
        let v: Value = serde_json::from_str(&format!("{{{c}}}")).unwrap();
        assert_eq!(v["cells"].as_array().unwrap().len(), column_count(gvr));
        c
    }

    fn svc(name: &str, spec: Value, status: Value) -> String {
        row(SERVICES, obj(name, json!({"spec": spec, "status": status})))
    }

    #[test]
    fn services_of_each_type() {
        assert_eq!(
            svc(
                "cip",
                json!({"type": "ClusterIP", "clusterIP": "10.0.0.33", "clusterIPs": ["10.0.0.33"],
                    "selector": {"b": "2", "a": "1"},
                    "ports": [{"name": "http", "port": 80, "protocol": "TCP"},
                              {"name": "dns", "port": 53, "protocol": "UDP"}]}),
                json!({"loadBalancer": {}})
            ),
            r#""cells":["cip","ClusterIP","10.0.0.33","\u003cnone\u003e","80/TCP,53/UDP","60s","a=1,b=2"]"#
        );
        assert_eq!(
            svc(
                "cip-ext",
                json!({"type": "ClusterIP", "clusterIPs": ["10.0.0.208"],
                    "externalIPs": ["1.2.3.4", "5.6.7.8"], "ports": [{"port": 80, "protocol": "TCP"}]}),
                json!({})
            ),
            r#""cells":["cip-ext","ClusterIP","10.0.0.208","1.2.3.4,5.6.7.8","80/TCP","60s","\u003cnone\u003e"]"#
        );
        assert_eq!(
            svc(
                "headless",
                json!({"type": "ClusterIP", "clusterIP": "None", "clusterIPs": ["None"], "selector": {"x": "y"}}),
                json!({})
            ),
            r#""cells":["headless","ClusterIP","None","\u003cnone\u003e","\u003cnone\u003e","60s","x=y"]"#
        );
        assert_eq!(
            svc(
                "np",
                json!({"type": "NodePort", "clusterIPs": ["10.0.0.251"],
                    "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"},
                              {"port": 443, "nodePort": 31648, "protocol": "SCTP"}]}),
                json!({})
            ),
            r#""cells":["np","NodePort","10.0.0.251","\u003cnone\u003e","80:30080/TCP,443:31648/SCTP","60s","\u003cnone\u003e"]"#
        );
        assert!(svc(
            "np-ext",
            json!({"type": "NodePort", "externalIPs": ["9.9.9.9"]}),
            json!({})
        )
        .contains(r#""NodePort","\u003cnone\u003e","9.9.9.9","\u003cnone\u003e""#));
        assert_eq!(
            svc(
                "extname",
                json!({"type": "ExternalName", "externalName": "db.example.com",
                    "ports": [{"port": 5432, "protocol": "TCP"}]}),
                json!({})
            ),
            r#""cells":["extname","ExternalName","\u003cnone\u003e","db.example.com","5432/TCP","60s","\u003cnone\u003e"]"#
        );
        // No type at all (the internal type's zero value).
        assert!(svc("x", json!({}), json!({}))
            .contains(r#""x","","\u003cnone\u003e","\u003cunknown\u003e""#));
    }

    #[test]
    fn load_balancers_list_their_ingress_points_then_external_ips() {
        let lb = |ext: Value, status: Value| {
            svc(
                "lb",
                json!({"type": "LoadBalancer", "clusterIPs": ["10.0.0.69"], "externalIPs": ext,
                    "ports": [{"port": 80, "nodePort": 32633, "protocol": "TCP"}]}),
                json!({"loadBalancer": status}),
            )
        };
        assert_eq!(
            lb(json!(null), json!({})),
            r#""cells":["lb","LoadBalancer","10.0.0.69","\u003cpending\u003e","80:32633/TCP","60s","\u003cnone\u003e"]"#
        );
        // IPs, else hostnames; sorted, without repeats.
        assert!(lb(
            json!(null),
            json!({"ingress": [{"ip": "10.9.0.2"}, {"hostname": "b.example.com"}, {"ip": "10.9.0.1"},
                {"ip": "10.9.0.2"}, {"hostname": "a.example.com", "ip": ""}]})
        )
        .contains(r#""10.9.0.1,10.9.0.2,a.example.com,b.example.com""#));
        assert!(lb(
            json!(["7.7.7.7"]),
            json!({"ingress": [{"ip": "10.9.0.5"}, {"ip": "10.9.0.4"}]})
        )
        .contains(r#""10.9.0.4,10.9.0.5,7.7.7.7""#));
        assert!(lb(json!(["7.7.7.8"]), json!({})).contains(r#""10.0.0.69","7.7.7.8""#));
    }

    #[test]
    fn endpoints_show_three_addresses_and_how_many_more() {
        let ep = |subsets: Value| row(ENDPOINTS, obj("ep", json!({"subsets": subsets})));
        assert_eq!(
            ep(json!(null)),
            r#""cells":["ep","\u003cnone\u003e","60s"]"#
        );
        assert_eq!(
            ep(json!([{"addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}]}])),
            r#""cells":["ep","10.0.0.1,10.0.0.2","60s"]"#
        );
        assert_eq!(
            ep(
                json!([{"addresses": [{"ip": "10.0.0.1"}, {"ip": "fd00::1"}], "ports": [{"port": 80}]}])
            ),
            r#""cells":["ep","10.0.0.1:80,[fd00::1]:80","60s"]"#
        );
        // Each port with each address.
        assert_eq!(
            ep(json!([
                {"addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}],
                 "ports": [{"name": "a", "port": 80}, {"name": "b", "port": 81}]},
                {"addresses": [{"ip": "10.0.1.1"}], "notReadyAddresses": [{"ip": "10.0.1.9"}],
                 "ports": [{"port": 90}]},
            ])),
            r#""cells":["ep","10.0.0.1:80,10.0.0.2:80,10.0.0.1:81 + 2 more...","60s"]"#
        );
        assert_eq!(
            ep(json!([{"notReadyAddresses": [{"ip": "10.0.1.9"}], "ports": [{"port": 90}]}])),
            r#""cells":["ep","","60s"]"#
        );
        let three = json!([{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}, {"ip": "10.0.0.3"}]);
        assert_eq!(
            ep(json!([{"addresses": three}])),
            r#""cells":["ep","10.0.0.1,10.0.0.2,10.0.0.3","60s"]"#
        );
        assert_eq!(
            ep(json!([{"addresses": three}, {"addresses": [{"ip": "10.0.0.4"}]}])),
            r#""cells":["ep","10.0.0.1,10.0.0.2,10.0.0.3 + 1 more...","60s"]"#
        );
    }

    #[test]
    fn endpoint_slices_show_three_ports_and_addresses() {
        let es = |ty: &str, ports: Value, endpoints: Value| {
            row(
                SLICES,
                obj(
                    "es",
                    json!({"addressType": ty, "ports": ports, "endpoints": endpoints}),
                ),
            )
        };
        assert_eq!(
            es("IPv4", json!(null), json!([])),
            r#""cells":["es","IPv4","\u003cunset\u003e","\u003cunset\u003e","60s"]"#
        );
        // A port's number, else its name (defaulted to ""), else "*".
        assert_eq!(
            es(
                "IPv4",
                json!([{"name": "a", "port": 80}, {"name": "named"}, {"name": "p", "port": 82}, {"name": ""}]),
                json!([{"addresses": ["10.0.0.1", "10.0.0.2"]}, {"addresses": ["10.0.0.3"]}, {"addresses": ["10.0.0.4"]}])
            ),
            r#""cells":["es","IPv4","80,named,82 + 1 more...","10.0.0.1,10.0.0.2,10.0.0.3 + 1 more...","60s"]"#
        );
        assert_eq!(
            es(
                "IPv4",
                json!([{"name": ""}]),
                json!([{"addresses": ["10.0.0.1"]}])
            ),
            r#""cells":["es","IPv4","\u003cunset\u003e","10.0.0.1","60s"]"#
        );
        assert!(es("IPv4", json!([{}]), json!([])).contains(r#""IPv4","*""#));
        assert_eq!(
            es(
                "FQDN",
                json!([{"port": 80}, {"port": 81}, {"port": 82}, {"port": 83}, {"port": 84}]),
                json!([{"addresses": ["a.example.com"]}])
            ),
            r#""cells":["es","FQDN","80,81,82 + 2 more...","a.example.com","60s"]"#
        );
    }

    #[test]
    fn ingresses_print_alike_in_every_version() {
        let v1 = json!({"ingressClassName": "nginx", "tls": [{"hosts": ["a.example.com"]}],
            "rules": [{"host": "a.example.com"},
                {"http": {"paths": [{"path": "/", "pathType": "Prefix",
                    "backend": {"service": {"name": "s", "port": {"name": "http"}}}}]}},
                {"host": "b.example.com"}, {"host": "c.example.com"}, {"host": "d.example.com"}]});
        let status = json!({"loadBalancer": {"ingress": [{"hostname": "lb.example.com"}, {"ip": "10.1.1.1"}]}});
        let want = r#""cells":["ing","nginx","a.example.com,b.example.com,c.example.com + 2 more...","10.1.1.1,lb.example.com","80, 443","60s"]"#;
        for gvr in [
            ("networking.k8s.io", "v1", "ingresses"),
            ("networking.k8s.io", "v1beta1", "ingresses"),
            ("extensions", "v1beta1", "ingresses"),
        ] {
            assert_eq!(
                row(gvr, obj("ing", json!({"spec": v1, "status": status}))),
                want
            );
        }
        let beta = ("extensions", "v1beta1", "ingresses");
        let ing = |spec: Value| {
            row(
                beta,
                obj("ing", json!({"spec": spec, "status": {"loadBalancer": {}}})),
            )
        };
        assert_eq!(
            ing(json!({"backend": {"serviceName": "s", "servicePort": 80}})),
            r#""cells":["ing","\u003cnone\u003e","*","","80","60s"]"#
        );
        assert_eq!(
            ing(
                json!({"ingressClassName": "c", "backend": {"serviceName": "s", "servicePort": 80}, "tls": [{}]})
            ),
            r#""cells":["ing","c","*","","80, 443","60s"]"#
        );
        // Rules without a host count towards the three shown.
        assert!(
            ing(json!({"rules": [{}, {}, {}, {"host": "d.example.com"}]}))
                .contains(r#""\u003cnone\u003e","d.example.com","""#)
        );
        assert!(
            ing(json!({"rules": [{"host": "a"}, {"host": "b"}, {"host": "c"}]}))
                .contains(r#""a,b,c","""#)
        );
    }

    #[test]
    fn ingress_classes_name_their_parameters() {
        for v in ["v1", "v1beta1"] {
            let gvr = ("networking.k8s.io", v, "ingressclasses");
            let ic = |spec: Value| row(gvr, obj("ic", json!({"spec": spec})));
            assert_eq!(
                ic(json!({"controller": "example.com/c"})),
                r#""cells":["ic","example.com/c","\u003cnone\u003e","60s"]"#
            );
            assert_eq!(
                ic(json!({"controller": "example.com/c", "parameters":
                    {"apiGroup": "k8s.example.com", "kind": "IngressParameters", "name": "p"}})),
                r#""cells":["ic","example.com/c","IngressParameters.k8s.example.com/p","60s"]"#
            );
            assert_eq!(
                ic(json!({"controller": "a/b", "parameters": {"kind": "ConfigMap", "name": "cm"}})),
                r#""cells":["ic","a/b","ConfigMap/cm","60s"]"#
            );
        }
    }

    #[test]
    fn only_the_ported_versions_are_registered() {
        assert!(super::lookup("discovery.k8s.io", "v1", "endpointslices").is_none());
        assert!(super::lookup("networking.k8s.io", "v1", "networkpolicies").is_none());
        assert!(super::lookup("", "v1", "pods").is_none());
    }

    fn made(name: &str, rest: Value) -> Value {
        let mut o = rest;
        o["metadata"] = json!({"name": name, "creationTimestamp": "2026-01-01T00:00:00Z"});
        o
    }

    #[test]
    fn v1_29_service_cidrs_show_their_cidrs() {
        let v1_36 = Personality::NEWEST;
        check_as(
            v1_36,
            ("networking.k8s.io", "v1", "servicecidrs"),
            made(
                "kubernetes",
                json!({"spec": {"cidrs": ["10.96.0.0/16", "fd00:10:96::/112"]}}),
            ),
            r#""cells":["kubernetes","10.96.0.0/16,fd00:10:96::/112","60m"]"#,
        );
    }

    #[test]
    fn v1_27_ip_addresses_show_their_parent_and_an_age_without_a_column() {
        let v1_36 = Personality::NEWEST;
        let gvr = ("networking.k8s.io", "v1", "ipaddresses");
        // Two columns (Name, ParentRef), three cells: printIPAddress
        // appends the age all the same.
        assert_eq!(column_count_as(v1_36, gvr), 2);
        let ip = |parent: Value| made("10.96.0.10", json!({"spec": {"parentRef": parent}}));
        assert_eq!(
            cells_as(
                v1_36,
                gvr,
                ip(
                    json!({"group": "", "resource": "services", "namespace": "kube-system", "name": "kube-dns"})
                ),
                NOW
            ),
            r#""cells":["10.96.0.10","services/kube-system/kube-dns","60m"]"#
        );
        assert_eq!(
            cells_as(
                v1_36,
                gvr,
                ip(
                    json!({"group": "Gateway.Networking.k8s.io", "resource": "Gateways", "name": "gw"})
                ),
                NOW
            ),
            r#""cells":["10.96.0.10","gateways.gateway.networking.k8s.io/gw","60m"]"#
        );
        assert_eq!(
            cells_as(v1_36, gvr, made("10.96.0.11", json!({"spec": {}})), NOW),
            r#""cells":["10.96.0.11","\u003cnone\u003e","60m"]"#
        );
    }

    #[test]
    fn v1_36_prints_ingress_classes_as_v1_20_did() {
        check_as(
            Personality::NEWEST,
            ("networking.k8s.io", "v1", "ingressclasses"),
            made(
                "nginx",
                json!({"spec": {"controller": "k8s.io/ingress-nginx",
                    "parameters": {"apiGroup": "k8s.example.com", "kind": "IngressParameters", "name": "external-lb"}}}),
            ),
            r#""cells":["nginx","k8s.io/ingress-nginx","IngressParameters.k8s.example.com/external-lb","60m"]"#,
        );
    }
}
