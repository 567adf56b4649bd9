//! Label selectors (`k8s.io/apimachinery/pkg/labels`): `=`, `==`, `!=`, `in`,
//! `notin`, existence, `!key`, `>` and `<`.

use super::SelectorError;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    Equals,
    NotEquals,
    In,
    NotIn,
    Exists,
    DoesNotExist,
    GreaterThan,
    LessThan,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    pub key: String,
    pub op: Op,
    pub values: Vec<String>,
}

/// A parsed label selector; empty selects everything.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Ident(String),
    Bang,
    Eq,
    DoubleEq,
    NotEq,
    In,
    NotIn,
    Open,
    Close,
    Comma,
    Gt,
    Lt,
    End,
}

impl Tok {
    fn literal(&self) -> String {
        match self {
            Tok::Ident(s) => s.clone(),
            Tok::Bang => "!".into(),
            Tok::Eq => "=".into(),
            Tok::DoubleEq => "==".into(),
            Tok::NotEq => "!=".into(),
            Tok::In => "in".into(),
            Tok::NotIn => "notin".into(),
            Tok::Open => "(".into(),
            Tok::Close => ")".into(),
            Tok::Comma => ",".into(),
            Tok::Gt => ">".into(),
            Tok::Lt => "<".into(),
            Tok::End => "".into(),
        }
    }
}

fn is_special(c: char) -> bool {
    matches!(c, '!' | '=' | '>' | '<' | '(' | ')' | ',')
}

/// Lexes into (token, as-keyword) pairs; whether `in`/`notin` are keywords
/// depends on the parser's position, as in apimachinery's `ParserContext`.
fn lex(input: &str) -> Vec<Tok> {
    let chars: Vec<char> = input.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        if is_special(c) {
            let next = chars.get(i + 1).copied();
            let (tok, len) = match (c, next) {
                ('=', Some('=')) => (Tok::DoubleEq, 2),
                ('!', Some('=')) => (Tok::NotEq, 2),
                ('=', _) => (Tok::Eq, 1),
                ('!', _) => (Tok::Bang, 1),
                ('>', _) => (Tok::Gt, 1),
                ('<', _) => (Tok::Lt, 1),
                ('(', _) => (Tok::Open, 1),
                (')', _) => (Tok::Close, 1),
                _ => (Tok::Comma, 1),
            };
            out.push(tok);
            i += len;
            continue;
        }
        let start = i;
        while i < chars.len() && !chars[i].is_whitespace() && !is_special(chars[i]) {
            i += 1;
        }
        out.push(Tok::Ident(chars[start..i].iter().collect()));
    }
    out.push(Tok::End);
    out
}

struct Parser {
    toks: Vec<Tok>,
    pos: usize,
}

/// apimachinery distinguishes lexing `in`/`notin` as keywords only where an
/// operator may stand.
#[derive(Clone, Copy, PartialEq)]
enum Ctx {
    KeyAndOperator,
    Values,
}

impl Parser {
    fn tok(&self, at: usize, ctx: Ctx) -> Tok {
        let t = self.toks[at.min(self.toks.len() - 1)].clone();
        match (&t, ctx) {
            (Tok::Ident(s), Ctx::KeyAndOperator) if s == "in" => Tok::In,
            (Tok::Ident(s), Ctx::KeyAndOperator) if s == "notin" => Tok::NotIn,
            _ => t,
        }
    }
    fn lookahead(&self, ctx: Ctx) -> Tok {
        self.tok(self.pos, ctx)
    }
    fn consume(&mut self, ctx: Ctx) -> Tok {
        let t = self.tok(self.pos, ctx);
        if self.pos < self.toks.len() - 1 {
            self.pos += 1;
        }
        t
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, String> {
        let mut reqs = Vec::new();
        loop {
            match self.lookahead(Ctx::Values) {
                Tok::Ident(_) | Tok::Bang => {
                    let r = self
                        .requirement()
                        .map_err(|e| format!("unable to parse requirement: {e}"))?;
                    reqs.push(r);
                    match self.consume(Ctx::Values) {
                        Tok::End => return Ok(reqs),
                        Tok::Comma => match self.lookahead(Ctx::Values) {
                            Tok::Ident(_) | Tok::Bang => {}
                            t => {
                                return Err(format!(
                                    "found '{}', expected: identifier after ','",
                                    t.literal()
                                ))
                            }
                        },
                        t => {
                            return Err(format!(
                                "found '{}', expected: ',' or 'end of string'",
                                t.literal()
                            ))
                        }
                    }
                }
                Tok::End => return Ok(reqs),
                t => {
                    return Err(format!(
                        "found '{}', expected: !, identifier, or 'end of string'",
                        t.literal()
                    ))
                }
            }
        }
    }

    fn requirement(&mut self) -> Result<Requirement, String> {
        let mut op = None;
        let mut t = self.consume(Ctx::Values);
        if t == Tok::Bang {
            op = Some(Op::DoesNotExist);
            t = self.consume(Ctx::Values);
        }
        let key = match t {
            Tok::Ident(k) => k,
            t => return Err(format!("found '{}', expected: identifier", t.literal())),
        };
        validate_key(&key)?;
        if matches!(self.lookahead(Ctx::Values), Tok::End | Tok::Comma) {
            op.get_or_insert(Op::Exists);
        }
        // `!key` ends the requirement whatever follows; the caller judges it.
        if let Some(op) = op {
            return new_requirement(key, op, vec![]);
        }
        let op = match self.consume(Ctx::KeyAndOperator) {
            Tok::In => Op::In,
            Tok::NotIn => Op::NotIn,
            Tok::Eq | Tok::DoubleEq => Op::Equals,
            Tok::NotEq => Op::NotEquals,
            Tok::Gt => Op::GreaterThan,
            Tok::Lt => Op::LessThan,
            t => {
                return Err(format!(
                    "found '{}', expected: '=', '!=', '==', 'in', notin'",
                    t.literal()
                ))
            }
        };
        let values = match op {
            Op::In | Op::NotIn => self.set_values()?,
            _ => self.exact_value()?,
        };
        new_requirement(key, op, values)
    }

    /// `parseValues` and `parseIdentifiersList`, quirks included.
    fn set_values(&mut self) -> Result<Vec<String>, String> {
        match self.consume(Ctx::Values) {
            Tok::Open => {}
            t => return Err(format!("found '{}' expected: '('", t.literal())),
        }
        match self.lookahead(Ctx::Values) {
            Tok::Close => {
                self.consume(Ctx::Values);
                return Ok(vec![String::new()]);
            }
            Tok::Ident(_) | Tok::Comma => {}
            t => {
                return Err(format!(
                    "found '{}', expected: ',', ')' or identifier",
                    t.literal()
                ))
            }
        }
        let mut values: Vec<String> = Vec::new();
        let insert = |values: &mut Vec<String>, v: String| {
            if !values.contains(&v) {
                values.push(v);
            }
        };
        loop {
            match self.consume(Ctx::Values) {
                Tok::Ident(v) => {
                    insert(&mut values, v);
                    match self.lookahead(Ctx::Values) {
                        Tok::Comma => continue,
                        Tok::Close => break,
                        t => return Err(format!("found '{}', expected: ',' or ')'", t.literal())),
                    }
                }
                Tok::Comma => {
                    if values.is_empty() {
                        insert(&mut values, String::new());
                    }
                    match self.lookahead(Ctx::Values) {
                        Tok::Close => {
                            insert(&mut values, String::new());
                            break;
                        }
                        Tok::Comma => {
                            self.consume(Ctx::Values);
                            insert(&mut values, String::new());
                        }
                        _ => {}
                    }
                }
                t => {
                    return Err(format!(
                        "found '{}', expected: ',', or identifier",
                        t.literal()
                    ))
                }
            }
        }
        // The closing parenthesis the list stopped at.
        self.consume(Ctx::Values);
        Ok(values)
    }

    fn exact_value(&mut self) -> Result<Vec<String>, String> {
        match self.lookahead(Ctx::Values) {
            Tok::End | Tok::Comma => Ok(vec![String::new()]),
            _ => match self.consume(Ctx::Values) {
                Tok::Ident(v) => Ok(vec![v]),
                t => Err(format!("found '{}', expected: identifier", t.literal())),
            },
        }
    }
}

const NAME_FMT: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const VALUE_FMT: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

fn is_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

fn is_dns1123_subdomain(s: &str) -> bool {
    s.len() <= 253
        && s.split('.').all(|part| {
            let b = part.as_bytes();
            !b.is_empty()
                && b[0].is_ascii_alphanumeric()
                && b[b.len() - 1].is_ascii_alphanumeric()
                && b.iter()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        })
}

/// `validation.IsQualifiedName`, joined the way `labels.validateLabelKey` reports it.
fn validate_key(key: &str) -> Result<(), String> {
    let parts: Vec<&str> = key.split('/').collect();
    let (prefix, name) = match parts.as_slice() {
        [name] => (None, *name),
        [prefix, name] => (Some(*prefix), *name),
        _ => {
            return Err(format!("invalid label key \"{key}\": a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"));
        }
    };
    let mut errs = Vec::new();
    if let Some(p) = prefix {
        if p.is_empty() {
            errs.push("prefix part must be non-empty".to_string());
        } else if !is_dns1123_subdomain(p) {
            errs.push("prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')".to_string());
        }
    }
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errs.push("name part must be no more than 63 characters".to_string());
    }
    if !is_name_part(name) {
        errs.push(NAME_FMT.to_string());
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(format!("invalid label key \"{key}\": {}", errs.join("; ")))
    }
}

fn validate_value(key: &str, v: &str) -> Result<(), String> {
    let mut errs = Vec::new();
    if v.len() > 63 {
        errs.push("must be no more than 63 characters");
    }
    if !v.is_empty() && !is_name_part(v) {
        errs.push(VALUE_FMT);
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "invalid label value: \"{v}\": at key: \"{key}\": {}",
            errs.join("; ")
        ))
    }
}

fn new_requirement(key: String, op: Op, values: Vec<String>) -> Result<Requirement, String> {
    match op {
        Op::In | Op::NotIn if values.is_empty() => {
            return Err("for 'in', 'notin' operators, values set can't be empty".into())
        }
        Op::Equals | Op::NotEquals if values.len() != 1 => {
            return Err("exact-match compatibility requires one single value".into())
        }
        Op::Exists | Op::DoesNotExist if !values.is_empty() => {
            return Err("values set must be empty for exists and does not exist".into())
        }
        Op::GreaterThan | Op::LessThan => {
            if values.len() != 1 {
                return Err("for 'Gt', 'Lt' operators, exactly one value is required".into());
            }
            if values[0].parse::<i64>().is_err() {
                return Err("for 'Gt', 'Lt' operators, the value must be an integer".into());
            }
        }
        _ => {}
    }
    for v in &values {
        validate_value(&key, v)?;
    }
    Ok(Requirement { key, op, values })
}

impl LabelSelector {
    /// Parses like `labels.Parse`; the error text is what the apiserver puts
    /// into its 400 `Status`.
    pub fn parse(input: &str) -> Result<Self, SelectorError> {
        let mut p = Parser {
            toks: lex(input),
            pos: 0,
        };
        let mut requirements = p.parse().map_err(SelectorError::Label)?;
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(LabelSelector { requirements })
    }

    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// `get` looks a label up by key; labels are few, so a linear scan wins.
    pub fn matches<'a>(&self, get: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.requirements.iter().all(|r| {
            let have = get(&r.key);
            match r.op {
                Op::Exists => have.is_some(),
                Op::DoesNotExist => have.is_none(),
                Op::Equals | Op::In => have.is_some_and(|v| r.values.iter().any(|x| x == v)),
                Op::NotEquals | Op::NotIn => !have.is_some_and(|v| r.values.iter().any(|x| x == v)),
                Op::GreaterThan | Op::LessThan => {
                    let Some(Ok(have)) = have.map(str::parse::<i64>) else {
                        return false;
                    };
                    let want: i64 = r.values[0].parse().unwrap_or_default();
                    if r.op == Op::GreaterThan {
                        have > want
                    } else {
                        have < want
                    }
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sel(s: &str) -> LabelSelector {
        LabelSelector::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }
    fn labels<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<&'a str> + 'a {
        move |k| pairs.iter().find(|(kk, _)| *kk == k).map(|(_, v)| *v)
    }

    #[test]
    fn empty_selector_matches_everything() {
        assert!(sel("").matches(labels(&[])));
        assert!(sel("  ").is_empty());
    }

    #[test]
    fn equality_operators_need_the_label_with_that_value() {
        let l = [("app", "web"), ("tier", "front")];
        assert!(sel("app=web").matches(labels(&l)));
        assert!(sel("app==web,tier=front").matches(labels(&l)));
        assert!(!sel("app=db").matches(labels(&l)));
        assert!(!sel("missing=x").matches(labels(&l)));
    }

    #[test]
    fn inequality_matches_when_the_label_is_missing() {
        let l = [("app", "web")];
        assert!(sel("tier!=front").matches(labels(&l)));
        assert!(!sel("app!=web").matches(labels(&l)));
        assert!(sel("tier notin (a,b)").matches(labels(&l)));
        assert!(!sel("app notin (web,b)").matches(labels(&l)));
    }

    #[test]
    fn set_and_existence_operators() {
        let l = [("app", "web"), ("env", "")];
        assert!(sel("app in (db, web)").matches(labels(&l)));
        assert!(!sel("app in (db)").matches(labels(&l)));
        assert!(sel("app").matches(labels(&l)));
        assert!(sel("env").matches(labels(&l)));
        assert!(sel("!tier").matches(labels(&l)));
        assert!(!sel("!app").matches(labels(&l)));
        assert!(sel("env=").matches(labels(&l)));
        assert!(sel("env in ()").matches(labels(&l)));
    }

    #[test]
    fn numeric_comparisons_parse_both_sides() {
        let l = [("n", "5"), ("s", "x")];
        assert!(sel("n>4").matches(labels(&l)));
        assert!(!sel("n<5").matches(labels(&l)));
        assert!(!sel("s>1").matches(labels(&l)));
        assert!(LabelSelector::parse("n>x").is_err());
    }

    #[test]
    fn in_and_notin_are_plain_values_where_a_value_stands() {
        let l = [("k", "in")];
        assert!(sel("k=in").matches(labels(&l)));
        assert!(sel("k in (in,notin)").matches(labels(&l)));
    }

    #[test]
    fn qualified_keys_are_accepted() {
        let l = [("app.kubernetes.io/name", "x")];
        assert!(sel("app.kubernetes.io/name=x").matches(labels(&l)));
    }

    #[test]
    fn malformed_selectors_are_rejected_with_a_reason() {
        for bad in [
            "=x",
            "a==",
            "a=b=c",
            "a in b",
            "a in (b",
            "a,",
            ",a",
            "a b",
            "!a=b",
            "a/b/c=d",
            "-a=b",
            "a=-b",
            "a notin",
            "(",
            "a in (b))",
        ] {
            if bad == "a==" {
                // `a==` is `a` equal to the empty value: valid, like apimachinery.
                assert!(LabelSelector::parse(bad).is_ok());
                continue;
            }
            LabelSelector::parse(bad).expect_err(bad);
        }
    }

    #[test]
    fn error_texts_are_apimachinerys() {
        let err = |s: &str| LabelSelector::parse(s).unwrap_err().to_string();
        assert_eq!(
            err("a in b"),
            "unable to parse requirement: found 'b' expected: '('"
        );
        assert_eq!(
            err("a===b"),
            "unable to parse requirement: found '=', expected: identifier"
        );
        assert_eq!(err("!a=b"), "found '=', expected: ',' or 'end of string'");
        assert_eq!(err("a,"), "found '', expected: identifier after ','");
        assert_eq!(
            err("a b"),
            "unable to parse requirement: found 'b', expected: '=', '!=', '==', 'in', notin'"
        );
        assert!(err("k=-v").starts_with("unable to parse requirement: invalid label value: \"-v\": at key: \"k\": a valid label"));
    }

    #[test]
    fn over_long_values_are_rejected() {
        let long = "a".repeat(64);
        assert!(LabelSelector::parse(&format!("k={long}")).is_err());
        assert!(LabelSelector::parse(&format!("{long}=v")).is_err());
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        for s in [
            "\u{0}",
            "é=ü",
            "a in (,,)",
            "!!",
            "a>>1",
            "((((",
            "a in (b,,c)",
        ] {
            let _ = LabelSelector::parse(s);
        }
    }
}
