//! A mechanism file's numbers changed in its own text, its comments and layout kept: the line of
//! each key found (at the top, or in the `[[bodies]]`, `[[joints]]`... table of its name), the
//! number replaced (a plain value, an array's item, an inline table's key). The result is read
//! back and must hold exactly the values asked, or None is returned and the caller writes the
//! file anew.

/// One step of a key: a name, with an array's index when it has one (`g3[0]`).
fn split(step: &str) -> (&str, Option<usize>) {
    match step.split_once('[') {
        Some((name, rest)) => (name, rest.strip_suffix(']').and_then(|i| i.parse().ok())),
        None => (step, None),
    }
}

/// The lines (start, end) of the part of `lines` where `key`'s line lies, and the steps of the
/// key left to find there: the top (before the first table) for a plain key; the array's table
/// whose `name` is the key's second step for `bodies.<name>....`.
fn region<'k>(lines: &[&str], key: &'k str) -> Option<(usize, usize, Vec<&'k str>)> {
    let steps: Vec<&str> = key.split('.').collect();
    let header = |l: &str| l.trim_start().starts_with('[');
    let top_end = lines.iter().position(|l| header(l)).unwrap_or(lines.len());
    if steps.len() >= 3 {
        let array = format!("[[{}]]", steps[0]);
        let name = format!("name = \"{}\"", steps[1]);
        let mut k = 0;
        while k < lines.len() {
            if lines[k].trim() == array {
                let end = (k + 1..lines.len())
                    .find(|&j| header(lines[j]))
                    .unwrap_or(lines.len());
                if lines[k + 1..end].iter().any(|l| l.trim() == name) {
                    return Some((k + 1, end, steps[2..].to_vec()));
                }
                k = end;
            } else {
                k += 1;
            }
        }
        return None;
    }
    Some((0, top_end, steps))
}

/// The span (byte range in `s`) of the number after `name =` at the start of `s` (spaces
/// allowed), and where the text after it starts.
fn number_after(s: &str, name: &str) -> Option<(usize, usize)> {
    let rest = s.trim_start().strip_prefix(name)?;
    let rest = rest.trim_start().strip_prefix('=')?;
    let start = s.len() - rest.len() + (rest.len() - rest.trim_start().len());
    let len = s[start..]
        .find(|c: char| !(c.is_ascii_digit() || "+-.eE_".contains(c)))
        .unwrap_or(s.len() - start);
    (len > 0).then_some((start, start + len))
}

/// `line` with the number that `steps` name replaced by `value`: `name = 1.0`, `name = [1.0,
/// 2.0]` (the item of the index), `name = { sub = 1.0, ... }`.
fn edit_line(line: &str, steps: &[&str], value: &str) -> Option<String> {
    let (name, index) = split(steps[0]);
    match (steps.len(), index) {
        (1, None) => {
            let (a, b) = number_after(line, name)?;
            Some(format!("{}{value}{}", &line[..a], &line[b..]))
        }
        (1, Some(i)) => {
            let open = line.find('[')?;
            let close = open + line[open..].find(']')?;
            let items: Vec<&str> = line[open + 1..close].split(',').collect();
            let item = items.get(i)?;
            let start = open + 1 + items[..i].iter().map(|s| s.len() + 1).sum::<usize>();
            let lead = item.len() - item.trim_start().len();
            let end = start + item.trim_end().len();
            Some(format!("{}{value}{}", &line[..start + lead], &line[end..]))
        }
        (2, None) => {
            let open = line.find('{')?;
            let inner = &line[open + 1..];
            let (sub, _) = split(steps[1]);
            let at = inner
                .match_indices(sub)
                .map(|(i, _)| i)
                .find(|&i| number_after(&inner[i..], sub).is_some())?;
            let (a, b) = number_after(&inner[at..], sub)?;
            let (a, b) = (open + 1 + at + a, open + 1 + at + b);
            Some(format!("{}{value}{}", &line[..a], &line[b..]))
        }
        _ => None,
    }
}

/// `text` with the number at `key` set to `value` in place, or None when its line is not
/// found in a form edited here.
fn edit_one(text: &str, key: &str, value: f64) -> Option<String> {
    let lines: Vec<&str> = text.split('\n').collect();
    let (start, end, steps) = region(&lines, key)?;
    let (first, _) = split(steps[0]);
    let k = (start..end).find(|&k| number_after_name(lines[k], first))?;
    let edited = edit_line(lines[k], &steps, &format!("{value:?}"))?;
    let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    out[k] = edited;
    Some(out.join("\n"))
}

/// Whether `line` sets `name` (`name = ...`).
fn number_after_name(line: &str, name: &str) -> bool {
    line.trim_start()
        .strip_prefix(name)
        .is_some_and(|r| r.trim_start().starts_with('='))
}

/// `text` with the numbers `values` (keys as [`crate::parameters::file_parameters`] names
/// them) set in place, when every one is found and the text read back holds `expected` (the
/// file's TOML with the values set); None otherwise.
pub(crate) fn edit_in_place(
    text: &str,
    values: &[(&str, f64)],
    expected: &toml::Value,
) -> Option<String> {
    let mut out = text.to_string();
    for (key, value) in values {
        out = edit_one(&out, key, *value)?;
    }
    let back: toml::Value = toml::from_str(&out).ok()?;
    (back == *expected).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plain key with its comment, an array's item, a general form's body key and an inline
    /// table's key, each changed in place with the comments and the other lines kept; a key on
    /// no line the editor knows gives None.
    #[test]
    fn numbers_are_changed_in_their_lines() {
        let text = "name = \"x\"  # the bench\nk = 20000.0        # N/m\ng3 = [0.075, 0.0]  # m\n\n[[bodies]]\nname = \"rod\"\nmass = 0.676\ncentroid = [0.15, 0.0]\n\n[[joints]]\nname = \"axle\"\nfriction = { viscous = 4.707e-2, coulomb = 1.839e-1, sharpness = 100.0 }\n";
        let set = [
            ("k", 24000.5),
            ("g3[1]", -0.002),
            ("bodies.rod.mass", 0.7),
            ("bodies.rod.centroid[0]", 0.2),
            ("joints.axle.friction.coulomb", 0.25),
        ];
        let mut expected: toml::Value = toml::from_str(text).unwrap();
        expected["k"] = toml::Value::Float(24000.5);
        expected["g3"][1] = toml::Value::Float(-0.002);
        expected["bodies"][0]["mass"] = toml::Value::Float(0.7);
        expected["bodies"][0]["centroid"][0] = toml::Value::Float(0.2);
        expected["joints"][0]["friction"]["coulomb"] = toml::Value::Float(0.25);
        let out = edit_in_place(text, &set, &expected).expect("edited in place");
        assert!(out.contains("k = 24000.5        # N/m"), "{out}");
        assert!(out.contains("g3 = [0.075, -0.002]  # m"), "{out}");
        assert!(out.contains("centroid = [0.2, 0.0]"), "{out}");
        assert!(
            out.contains("{ viscous = 4.707e-2, coulomb = 0.25, sharpness"),
            "{out}"
        );
        assert_eq!(out.lines().count(), text.lines().count());
        assert_eq!(
            edit_in_place(text, &[("bodies.bar.mass", 1.0)], &expected),
            None
        );
    }
}
