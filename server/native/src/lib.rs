//! The token-to-fingerprint loop of simhash-index (steps 2-4 of the pipeline), in Rust.
//!
//! It computes exactly what `simhash_server.fingerprint.tokens`, `.features` (the blend recipes, whose
//! unigram / bigram / skip-bigram weights each Fingerprinter is given) and `.simhash` compute in Python, or
//! for recipe v3 `.features.shingle_hashes` and `.minhash`, so a fingerprint never depends on which path
//! made it.  The parts whose rules live in Python's Unicode database come from Python, so the two cannot
//! drift apart:
//! - the text arrives already normalised (`simhash_server.normalize`: NFKC, case folding); what this crate
//!   does for that step is only to replace each character by its NFKD decomposition, from a table Python
//!   builds (see `decompose`), which leaves Python's NFKC less to do and never changes its result;
//! - each code point's class (separator, Han, other ideograph, word character) is a table Python builds
//!   from its own regular expression;
//! - the IDF table is jieba's, parsed by Python.
//! Han runs are segmented by jieba-rs 0.11.0, the version rjieba 0.2.2 wraps (jieba's tokens on Han runs).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Arc, Mutex, OnceLock};

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};
use jieba_rs::Jieba;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use xxhash_rust::xxh3::xxh3_64;

const SEPARATOR: u8 = 0;
const HAN: u8 = 1;
const OTHER_IDEOGRAPH: u8 = 2;
const WORD: u8 = 3;
const CODE_POINTS: usize = 0x110000;
const DECOMPOSES: u8 = 0x80; // flag beside the class: the character's NFKD differs from it

const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;
const SKIP: u64 = 0xD6E8_FEB8_6659_FD93;
/// `sentences._SPLIT`: where a segment ends; all but the line break end a sentence.
const fn ends_segment(ch: char) -> bool {
    matches!(ch, '.' | '!' | '?' | ';' | '\u{3002}' | '\n')
}
const LONG_SENTENCE: usize = 10; // `sentences.LONG_SENTENCE`
const SHORT_SENTENCE: usize = 4; // `sentences.SHORT_SENTENCE`
const MAX_EXACT: i64 = 1 << 53; // the Python side's float64 sums are exact below this

/// MurmurHash3's 64-bit finaliser (the same as `simhash_server.features.fmix64`).
const fn fmix64(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
    x ^= x >> 33;
    x = x.wrapping_mul(0xC4CE_B9FE_1A85_EC53);
    x ^ (x >> 33)
}

/// A Hasher for keys that already are XXH3-64 hashes: it passes the key through.
#[derive(Default)]
struct PassThrough(u64);

impl Hasher for PassThrough {
    fn write(&mut self, _: &[u8]) {
        unreachable!("only u64 keys are hashed")
    }
    fn write_u64(&mut self, key: u64) {
        self.0 = key;
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

/// jieba's IDF table keyed by the token's XXH3-64 (computed anyway); the token is kept and compared, so a
/// hash collision can never lend a token another's IDF.
type IdfTable = HashMap<u64, (Box<str>, i64), BuildHasherDefault<PassThrough>>;

/// BIT_MASKS[byte][j] is all ones where bit j of byte is set: a branch-free, vectorisable per-bit sum.
const BIT_MASKS: [[i64; 8]; 256] = {
    let mut table = [[0i64; 8]; 256];
    let mut byte = 0;
    while byte < 256 {
        let mut j = 0;
        while j < 8 {
            table[byte][j] = -(((byte >> j) & 1) as i64);
            j += 1;
        }
        byte += 1;
    }
    table
};

/// Per-bit weighted sums of Charikar's SimHash, and the distinct feature hashes seen.
struct Accumulator {
    ones: [i64; 64],
    total: i64,
    seen: Vec<u64>,
}

impl Accumulator {
    fn with_capacity(features: usize) -> Self {
        Accumulator { ones: [0; 64], total: 0, seen: Vec::with_capacity(features) }
    }

    fn add(&mut self, hash: u64, weight: i64) {
        for (k, byte) in hash.to_le_bytes().into_iter().enumerate() {
            let masks = &BIT_MASKS[byte as usize];
            for j in 0..8 {
                self.ones[8 * k + j] += weight & masks[j];
            }
        }
        self.total += weight;
        self.seen.push(hash);
    }

    /// (fingerprint, distinct features): bit i is 1 where the features with bit i outweigh those without.
    fn finish(mut self) -> PyResult<(u64, usize)> {
        if self.total >= MAX_EXACT {
            return Err(PyValueError::new_err("feature weights too large to sum exactly"));
        }
        let mut value = 0u64;
        for (bit, ones) in self.ones.iter().enumerate() {
            if 2 * ones - self.total > 0 {
                value |= 1 << bit;
            }
        }
        self.seen.sort_unstable();
        self.seen.dedup();
        Ok((value, self.seen.len()))
    }
}

#[pyclass(frozen)]
struct Fingerprinter {
    jieba: Jieba,
    classes: Vec<u8>,
    decompositions: HashMap<char, String>,
    idf: IdfTable,
    median_idf: i64,
    weights: Option<(i64, i64, i64)>, // unigram, bigram, skip-bigram multiples of IDF; None: recipe v3 or v4
    tiered: bool,                     // recipe v4: character grams within segments, weighted by tier
    phrases: Option<(AhoCorasick, Vec<String>)>, // v4: Taiwan phrases and their mainland replacements
}

impl Fingerprinter {
    fn class(&self, ch: char) -> u8 {
        self.classes[ch as usize] & !DECOMPOSES
    }

    /// The tokens of a normalised text, in order (`simhash_server.tokens.tokenize`).
    fn tokens<'a>(&self, text: &'a str) -> Vec<&'a str> {
        let mut out = Vec::new();
        let mut chars = text.char_indices().peekable();
        while let Some((start, ch)) = chars.next() {
            let class = self.class(ch);
            let mut end = start + ch.len_utf8();
            match class {
                SEPARATOR => continue,
                OTHER_IDEOGRAPH => out.push(&text[start..end]), // one token each
                _ => {
                    while let Some(&(at, next)) = chars.peek() {
                        if self.class(next) != class {
                            break;
                        }
                        end = at + next.len_utf8();
                        chars.next();
                    }
                    let run = &text[start..end];
                    if class == HAN {
                        out.extend(self.jieba.cut(run, true).into_iter().map(|token| token.word));
                    } else {
                        out.push(run);
                    }
                }
            }
        }
        out
    }

    /// Recipe v4 (`sentences.segments`, `features.segment_grams`, `minhash.tiered_minhash_bits`): the
    /// fingerprint of a normalised text, the hashes of all its tokens, in order, and the fingerprints of the
    /// texts of its lines `a..b` for each `(a, b)` of `spans`.  Segments end at a sentence end or a line
    /// break; a sentence of 10 tokens or more is tier 0, of 4 or more tier 1, the rest tier 2.  Each distinct
    /// character gram within a segment counts once, at the lowest tier it has.
    ///
    /// A span's fingerprint is the one its lines' text would get alone: no segment crosses a line break, the
    /// digit runs and phrases folded contain none (checked where the phrases are given), so a line's grams
    /// and tiers do not depend on the lines around it, and each tier's grams are kept in line order.
    fn tiered_minhash(&self, text: &str, spans: &[(usize, usize)]) -> PyResult<(u64, Vec<u64>, Vec<u64>)> {
        // `normalize.fold_digits_and_phrases`: each run of ASCII digits becomes one 0, then the phrases.
        let mut digits = String::with_capacity(text.len());
        let mut in_run = false;
        for ch in text.chars() {
            if ch.is_ascii_digit() {
                if !in_run {
                    digits.push('0');
                }
                in_run = true;
            } else {
                digits.push(ch);
                in_run = false;
            }
        }
        let folded;
        let text = match &self.phrases {
            Some((automaton, values)) => {
                folded = automaton.replace_all(&digits, values);
                folded.as_str()
            }
            None => digits.as_str(),
        };
        let mut hashes = Vec::new();
        // Each tier's grams, repeats and all: a gram met again, or met in a higher tier too, lands on the same
        // bit with the same value in every round, so the rounds need no sort or dedup to count it once at its
        // lowest tier (the Python reference dedups; the fingerprints are the same).
        let mut by_tier: [Vec<u64>; 3] = [Vec::new(), Vec::new(), Vec::new()];
        let mut scratch = (String::new(), Vec::new());
        // lines[k]: how many grams each tier held where line k began; one entry more for the text's end.
        let mut lines: Vec<[usize; 3]> = vec![[0; 3]];
        let mut start = 0;
        for (at, ch) in text.char_indices() {
            if ends_segment(ch) {
                self.segment(&text[start..at], ch != '\n', &mut by_tier, &mut hashes, &mut scratch);
                start = at + ch.len_utf8();
                if ch == '\n' {
                    lines.push(by_tier.each_ref().map(Vec::len));
                }
            }
        }
        self.segment(&text[start..], false, &mut by_tier, &mut hashes, &mut scratch);
        lines.push(by_tier.each_ref().map(Vec::len));
        let mut parts = Vec::with_capacity(spans.len());
        for &(a, b) in spans {
            if a >= b || b >= lines.len() {
                return Err(PyValueError::new_err(format!(
                    "spans: ({a}, {b}) is no range of the text's {} lines",
                    lines.len() - 1
                )));
            }
            parts.push(tiered_rounds([0, 1, 2].map(|t| &by_tier[t][lines[a][t]..lines[b][t]])));
        }
        Ok((tiered_rounds(by_tier.each_ref().map(Vec::as_slice)), hashes, parts))
    }

    /// One segment of recipe v4: its grams pushed onto its tier's list, its tokens' hashes onto `hashes`.
    fn segment(
        &self,
        piece: &str,
        ended: bool,
        by_tier: &mut [Vec<u64>; 3],
        hashes: &mut Vec<u64>,
        (joined, weights): &mut (String, Vec<(usize, u32)>),
    ) {
        let tokens = self.tokens(piece);
        if tokens.is_empty() {
            return;
        }
        let tier: usize = match tokens.len() {
            n if ended && n >= LONG_SENTENCE => 0,
            n if ended && n >= SHORT_SENTENCE => 1,
            _ => 2,
        };
        segment_grams(&tokens, (joined, weights), &mut by_tier[tier]);
        hashes.extend(tokens.iter().map(|t| xxh3_64(t.as_bytes())));
    }

    /// The blend features of the tokens: unigrams weigh `u` x IDF, bigrams `b` x and skip-bigrams `s` x
    /// the smaller IDF of their pair (`blend-tfidf`: 2 / 3 / 2; `blend-tfidf-321`: 3 / 2 / 1).
    fn blend_tfidf(&self, hashes: &[u64], idfs: &[i64], (u, b, s): (i64, i64, i64)) -> Accumulator {
        let n = hashes.len();
        let mut acc = Accumulator::with_capacity(3 * n);
        for i in 0..n {
            acc.add(hashes[i], u * idfs[i]);
        }
        for i in 0..n.saturating_sub(1) {
            acc.add(fmix64(hashes[i].wrapping_mul(GOLDEN) ^ hashes[i + 1]), b * idfs[i].min(idfs[i + 1]));
        }
        for i in 0..n.saturating_sub(2) {
            acc.add(fmix64(hashes[i].wrapping_mul(GOLDEN) ^ hashes[i + 2] ^ SKIP), s * idfs[i].min(idfs[i + 2]));
        }
        acc
    }
}

#[pymethods]
impl Fingerprinter {
    /// `classes`: one byte per code point (0 separator, 1 Han, 2 other ideograph, 3 word character);
    /// `idf`: jieba's IDF x 100 as integers; `median_idf`: the weight of a token the table lacks;
    /// `decompositions`: NFKD of every code point whose NFKD differs from it (for v4, of what it folds to);
    /// `weights`: the blend's unigram, bigram and skip-bigram multiples of IDF, or None for recipe v3 (1-bit
    /// MinHash of the word 3-shingles, `minhash.py`) and v4; `tiered`: recipe v4 (`tiered_minhash_bits`).
    #[new]
    /// `phrases` (v4): normalised Taiwan phrase -> mainland phrase (`normalize.phrase_folding`), replaced
    /// leftmost-longest in the normalised text before its segments are cut.
    #[pyo3(signature = (classes, idf, median_idf, decompositions, weights, tiered = false, phrases = None))]
    fn new(
        classes: &[u8],
        idf: HashMap<String, i64>,
        median_idf: i64,
        decompositions: HashMap<char, String>,
        weights: Option<(i64, i64, i64)>,
        tiered: bool,
        phrases: Option<HashMap<String, String>>,
    ) -> PyResult<Self> {
        if weights.is_some_and(|(u, b, s)| u < 0 || b < 0 || s < 0) {
            return Err(PyValueError::new_err("blend weights must not be negative"));
        }
        if tiered && weights.is_some() {
            return Err(PyValueError::new_err("a tiered (v4) fingerprinter takes no blend weights"));
        }
        if classes.len() != CODE_POINTS {
            return Err(PyValueError::new_err(format!(
                "classes must have one byte per code point ({CODE_POINTS}), got {}",
                classes.len()
            )));
        }
        if let Some(bad) = classes.iter().find(|&&c| c > WORD) {
            return Err(PyValueError::new_err(format!("unknown character class {bad}")));
        }
        let words = idf.len();
        let idf: IdfTable =
            idf.into_iter().map(|(token, value)| (xxh3_64(token.as_bytes()), (token.into(), value))).collect();
        if idf.len() != words {
            return Err(PyValueError::new_err("two words of the IDF table share an XXH3-64 hash"));
        }
        let mut classes = classes.to_vec();
        for ch in decompositions.keys() {
            classes[*ch as usize] |= DECOMPOSES;
        }
        let phrases = match phrases {
            Some(table) if !table.is_empty() => {
                // Lines' fingerprints (`spans`) rely on no phrase reaching across a line break.
                if let Some(bad) = table.iter().find(|(k, v)| k.contains('\n') || v.contains('\n')) {
                    return Err(PyValueError::new_err(format!("phrase table: {:?} holds a line break", bad.0)));
                }
                let (keys, values): (Vec<String>, Vec<String>) = table.into_iter().unzip();
                let automaton = AhoCorasick::builder()
                    .match_kind(MatchKind::LeftmostLongest)
                    .kind(Some(AhoCorasickKind::DFA)) // built once per process; the fastest to search
                    .build(&keys)
                    .map_err(|e| PyValueError::new_err(format!("phrase table: {e}")))?;
                Some((automaton, values))
            }
            _ => None,
        };
        Ok(Fingerprinter { jieba: Jieba::new(), classes, decompositions, idf, median_idf, weights, tiered, phrases })
    }

    /// Each character replaced by its NFKD decomposition, or None when no character has one.
    ///
    /// NFKC(decompose(t)) == NFKC(t) for every t: NFKC composes the canonically reordered full
    /// decomposition, and decomposing first does not change that decomposition.  Python's NFKC returns at
    /// once from its quick check when the decomposed text is already NFKC (full-width punctuation, the
    /// common case in Chinese text), instead of decomposing and composing the whole text itself.
    fn decompose(&self, py: Python<'_>, text: &str) -> Option<String> {
        py.detach(|| {
            let first = text.char_indices().find(|(_, ch)| self.classes[*ch as usize] & DECOMPOSES != 0)?.0;
            let mut out = String::with_capacity(text.len() + 16);
            out.push_str(&text[..first]);
            for ch in text[first..].chars() {
                if self.classes[ch as usize] & DECOMPOSES != 0 {
                    out.push_str(&self.decompositions[&ch]);
                } else {
                    out.push(ch);
                }
            }
            Some(out)
        })
    }

    /// The tokens of a normalised text (for tests and tools; `fingerprint` does not build them).
    fn tokenize(&self, py: Python<'_>, normalized: &str) -> Vec<String> {
        py.detach(|| self.tokens(normalized).into_iter().map(str::to_owned).collect())
    }

    /// (fingerprint, distinct features, packed sketch or None) of a normalised text.  With `sketch` =
    /// (bins, bits), the same tokens also give the sketch (`packed_sketch` of their hashes), in this one call.
    #[pyo3(signature = (normalized, sketch = None))]
    fn fingerprint<'py>(
        &self,
        py: Python<'py>,
        normalized: &str,
        sketch: Option<(usize, u32)>,
    ) -> PyResult<(u64, usize, Option<Bound<'py, PyBytes>>)> {
        let (value, distinct, packed, _) = self.fingerprint_with_spans(py, normalized, sketch, Vec::new())?;
        Ok((value, distinct, packed))
    }

    /// `fingerprint`, and for recipe v4 the fingerprint of each `(a, b)` of `spans`: the text of the
    /// normalised text's lines a to b - 1 (split at '\n'), as `fingerprint` would give that text alone, from
    /// the grams the whole text's pass made (see `tiered_minhash`).
    #[pyo3(signature = (normalized, sketch, spans))]
    fn fingerprint_with_spans<'py>(
        &self,
        py: Python<'py>,
        normalized: &str,
        sketch: Option<(usize, u32)>,
        spans: Vec<(usize, usize)>,
    ) -> PyResult<(u64, usize, Option<Bound<'py, PyBytes>>, Vec<u64>)> {
        if let Some((bins, bits)) = sketch {
            check_shape(bins, bits)?;
        }
        if !self.tiered && !spans.is_empty() {
            return Err(PyValueError::new_err("spans: only a tiered (v4) fingerprinter fingerprints lines"));
        }
        let (value, distinct, packed, parts) = py.detach(|| {
            if self.tiered {
                let (value, hashes, parts) = self.tiered_minhash(normalized, &spans)?;
                let mut all = shingles(&hashes);
                // The sketch's bins keep minima, so the distinct shingles give the same sketch as all of them.
                let packed = sketch.map(|(bins, bits)| pack(&bin_minima_of_shingles(&all, bins), bits));
                all.sort_unstable();
                all.dedup();
                return Ok((value, if hashes.is_empty() { 0 } else { all.len() }, packed, parts));
            }
            let tokens = self.tokens(normalized);
            let hashes: Vec<u64> = tokens.iter().map(|t| xxh3_64(t.as_bytes())).collect();
            let (value, distinct) = match self.weights {
                None => minhash_bits(&hashes),
                Some(weights) => {
                    let idfs: Vec<i64> = tokens
                        .iter()
                        .zip(&hashes)
                        .map(|(token, hash)| match self.idf.get(hash) {
                            Some((known, idf)) if **known == **token => *idf,
                            _ => self.median_idf,
                        })
                        .collect();
                    self.blend_tfidf(&hashes, &idfs, weights).finish()?
                }
            };
            Ok::<_, PyErr>((value, distinct, sketch.map(|(bins, bits)| packed_sketch_of(&hashes, bins, bits)), Vec::new()))
        })?;
        Ok((value, distinct, packed.map(|bytes| PyBytes::new(py, &bytes)), parts))
    }
}

const SKETCH_SEED: u64 = 0x5DEE_CE66_DA3B_2C17;
const PROBES: u64 = 64;

/// The word 3-shingle hashes of a text's token hashes (`features.shingle_hashes`): one per run of 3 tokens,
/// or one of all of them for a text of fewer than 3.
fn shingles(h: &[u64]) -> Vec<u64> {
    if h.len() < 3 {
        let mut combined = h.len() as u64;
        for &value in h {
            combined = fmix64(combined.wrapping_mul(GOLDEN) ^ value);
        }
        return vec![combined];
    }
    h.windows(3)
        .map(|w| fmix64(fmix64(w[0].wrapping_mul(GOLDEN) ^ w[1]).wrapping_mul(GOLDEN) ^ w[2]))
        .collect()
}

const WIDE_FROM: u32 = 0x2E80; // `features.WIDE_FROM`: from here a character is wide
const GRAM_WIDTH: u32 = 4; // `features.GRAM_WIDTH`: 2 wide characters or 4 narrow ones
const TIER_ENTRY: [u32; 3] = [0, 8, 18]; // `minhash.TIER_ENTRY`
const FORCED_FROM: u32 = 256; // `minhash.FORCED_FROM`
const VALUE_MASK: u64 = (1 << 58) - 1;

const fn gram_weight(ch: char) -> u32 {
    if ch as u32 >= WIDE_FROM {
        2 // `features.WIDE_WEIGHT`
    } else {
        1 // `features.NARROW_WEIGHT`
    }
}

/// Recipe v4's grams of one segment (`features.segment_text`, `character_grams`), their hashes pushed onto
/// `out`: the tokens joined by spaces (none between two wide characters), then from each position the
/// shortest run weighing GRAM_WIDTH, until a gram has reached the end (a run cut short by the end is a gram
/// too).  `scratch` is reused.
fn segment_grams(tokens: &[&str], scratch: (&mut String, &mut Vec<(usize, u32)>), out: &mut Vec<u64>) {
    let (text, chars) = scratch;
    text.clear();
    chars.clear();
    for token in tokens {
        let first = token.chars().next().unwrap_or(' ');
        if let Some(last) = text.chars().next_back() {
            if !(last as u32 >= WIDE_FROM && first as u32 >= WIDE_FROM) {
                text.push(' ');
            }
        }
        text.push_str(token);
    }
    chars.extend(text.char_indices().map(|(at, ch)| (at, gram_weight(ch))));
    let (mut end, mut weight) = (0, 0);
    for start in 0..chars.len() {
        if start > 0 && end == chars.len() && weight < GRAM_WIDTH {
            break; // the last gram already reached the end
        }
        while end < chars.len() && weight < GRAM_WIDTH {
            weight += chars[end].1;
            end += 1;
        }
        let stop = chars.get(end).map_or(text.len(), |&(at, _)| at);
        out.push(xxh3_64(&text.as_bytes()[chars[start].0..stop]));
        weight -= chars[start].1;
    }
}

/// Recipe v4's fingerprint of distinct grams by tier (`minhash.tiered_minhash_bits`): rounds of
/// one-permutation hashing, tier t taking part from round TIER_ENTRY[t]; a bit is settled by the first round
/// that lands a gram on it, with that round's smallest value there, and is that value's lowest bit.
fn tiered_rounds(by_tier: [&[u64]; 3]) -> u64 {
    let Some(first) = (0..3).find(|&t| !by_tier[t].is_empty()) else {
        return 0;
    };
    let (mut settled, mut values) = (0u64, [0u64; 64]);
    let mut round = TIER_ENTRY[first];
    while settled != u64::MAX {
        let seed = fmix64(u64::from(round + 1).wrapping_mul(GOLDEN));
        let mut lowest = [u64::MAX; 64];
        for (tier, grams) in by_tier.iter().enumerate() {
            if TIER_ENTRY[tier] > round {
                continue;
            }
            for &x in grams.iter() {
                let y = fmix64(x ^ seed);
                let bit = if round < FORCED_FROM { (y >> 58) as usize } else { ((round - FORCED_FROM) % 64) as usize };
                lowest[bit] = lowest[bit].min(y & VALUE_MASK);
            }
        }
        for (bit, &value) in lowest.iter().enumerate() {
            if settled >> bit & 1 == 0 && value != u64::MAX {
                values[bit] = value;
                settled |= 1 << bit;
            }
        }
        round += 1;
    }
    values.iter().enumerate().fold(0u64, |acc, (j, v)| acc | ((v & 1) << j))
}

/// Recipe v3's 64 hash functions (`minhash.MULTIPLIERS`): function j maps a shingle hash x to the top 32 bits
/// of (x mod 2^32) * A[j] + (x div 2^32) * B[j] + C[j], wrapping; A, B, C are fmix64((j + 1) * GOLDEN ^ seed).
const MINHASH: [[u64; 64]; 3] = {
    let seeds = [0x243F_6A88_85A3_08D3u64, 0x1319_8A2E_0370_7344, 0xA409_3822_299F_31D0];
    let mut table = [[0u64; 64]; 3];
    let mut k = 0;
    while k < 3 {
        let mut j = 0;
        while j < 64 {
            table[k][j] = fmix64(((j as u64) + 1).wrapping_mul(GOLDEN) ^ seeds[k]);
            j += 1;
        }
        k += 1;
    }
    table
};

/// (fingerprint, distinct shingles) of recipe v3 (`minhash.shingle_minhash`): bit j is the lowest bit of the
/// smallest value hash function j gives any shingle; a text without tokens is (0, 0).
fn minhash_bits(token_hashes: &[u64]) -> (u64, usize) {
    if token_hashes.is_empty() {
        return (0, 0);
    }
    let mut shingles = shingles(token_hashes);
    let mut minima = [u32::MAX; 64];
    let [a, b, c] = &MINHASH;
    for &x in &shingles {
        let (low, high) = (x & 0xFFFF_FFFF, x >> 32);
        for j in 0..64 {
            let mixed = low.wrapping_mul(a[j]).wrapping_add(high.wrapping_mul(b[j])).wrapping_add(c[j]);
            minima[j] = minima[j].min((mixed >> 32) as u32);
        }
    }
    let value = minima.iter().enumerate().fold(0u64, |acc, (j, m)| acc | (u64::from(m & 1) << j));
    shingles.sort_unstable();
    shingles.dedup();
    (value, shingles.len())
}

/// Every bin's 64 probe targets, row by row (`sketch._probe_table`, transposed), computed once per size.
fn probe_table(bins: usize) -> Arc<Vec<u16>> {
    static TABLES: OnceLock<Mutex<HashMap<usize, Arc<Vec<u16>>>>> = OnceLock::new();
    let mut tables = TABLES.get_or_init(Default::default).lock().expect("probe tables");
    tables
        .entry(bins)
        .or_insert_with(|| {
            Arc::new(
                (0..bins as u64)
                    .flat_map(|i| {
                        (1..=PROBES).map(move |a| {
                            (fmix64(i.wrapping_mul(GOLDEN) ^ a.wrapping_add(SKETCH_SEED)) % bins as u64) as u16
                        })
                    })
                    .collect(),
            )
        })
        .clone()
}

type InverseProbes = (Vec<u32>, Vec<u32>); // (starts, entries)

/// The probe table inverted: for each target bin j, `entries[starts[j]..starts[j + 1]]` are
/// `attempt << 16 | i` for every attempt of every bin i whose probe lands on j.
fn inverse_probe_table(bins: usize) -> Arc<InverseProbes> {
    static TABLES: OnceLock<Mutex<HashMap<usize, Arc<InverseProbes>>>> = OnceLock::new();
    let mut tables = TABLES.get_or_init(Default::default).lock().expect("inverse probe tables");
    tables
        .entry(bins)
        .or_insert_with(|| {
            let table = probe_table(bins);
            let mut starts = vec![0u32; bins + 1];
            for &j in table.iter() {
                starts[j as usize + 1] += 1;
            }
            for j in 0..bins {
                starts[j + 1] += starts[j];
            }
            let mut next = starts.clone();
            let mut entries = vec![0u32; table.len()];
            for (k, &j) in table.iter().enumerate() {
                let (i, attempt) = (k / PROBES as usize, k % PROBES as usize);
                entries[next[j as usize] as usize] = (attempt as u32) << 16 | i as u32;
                next[j as usize] += 1;
            }
            Arc::new((starts, entries))
        })
        .clone()
}

/// The densified one-permutation MinHash of token hashes (`sketch._bin_minima`): each bin keeps the smallest
/// remaining bits of the shingle hashes whose top bits chose it; an empty bin borrows the first filled bin
/// along its fixed probe sequence, else the next filled bin circularly.  Same numbers as the numpy path.
fn bin_minima_of(token_hashes: &[u64], bins: usize) -> Vec<u64> {
    bin_minima_of_shingles(&shingles(token_hashes), bins)
}

fn bin_minima_of_shingles(shingles: &[u64], bins: usize) -> Vec<u64> {
    let bin_bits = bins.trailing_zeros();
    let low_mask = (1u64 << (64 - bin_bits)) - 1;
    let mut mins = vec![u64::MAX; bins];
    for &shingle in shingles {
        let hashed = fmix64(shingle ^ SKETCH_SEED);
        let which = (hashed >> (64 - bin_bits)) as usize;
        mins[which] = mins[which].min(hashed & low_mask);
    }
    let filled: Vec<usize> = (0..bins).filter(|&i| mins[i] != u64::MAX).collect();
    let is_filled: Vec<bool> = mins.iter().map(|&m| m != u64::MAX).collect(); // compact: fewer cache misses
    // Sources are filled bins, which never change, so the empty bins are filled in place.
    if filled.len() * 8 < bins {
        // Sparse: walk the probes that land on the few filled bins instead of every empty bin's sequence.
        // An empty bin's source is the filled bin its earliest such probe hits: min of (attempt, target).
        let (starts, entries) = &*inverse_probe_table(bins);
        let mut first = vec![u32::MAX; bins];
        for &j in &filled {
            for &entry in &entries[starts[j] as usize..starts[j + 1] as usize] {
                let i = (entry & 0xFFFF) as usize;
                first[i] = first[i].min((entry & !0xFFFF) | j as u32);
            }
        }
        for i in 0..bins {
            if !is_filled[i] {
                let source = if first[i] != u32::MAX {
                    (first[i] & 0xFFFF) as usize
                } else {
                    filled[filled.partition_point(|&j| j < i) % filled.len()]
                };
                mins[i] = mins[source];
            }
        }
        return mins;
    }
    let table = probe_table(bins);
    for i in 0..bins {
        if is_filled[i] {
            continue;
        }
        let row = &table[i * PROBES as usize..(i + 1) * PROBES as usize];
        let probe = row.iter().map(|&j| j as usize).find(|&j| is_filled[j]);
        let source = probe.unwrap_or_else(|| filled[filled.partition_point(|&j| j < i) % filled.len()]);
        mins[i] = mins[source];
    }
    mins
}

/// `bin_minima(token_hashes, bins)`: token hashes and the result as little-endian uint64 bytes.
#[pyfunction]
fn bin_minima<'py>(py: Python<'py>, token_hashes: &[u8], bins: usize) -> PyResult<Bound<'py, PyBytes>> {
    if !(2..=1 << 16).contains(&bins) || !bins.is_power_of_two() {
        return Err(PyValueError::new_err(format!("bins must be a power of two from 2 to 65536, got {bins}")));
    }
    if token_hashes.len() % 8 != 0 {
        return Err(PyValueError::new_err("token_hashes must be little-endian uint64 values"));
    }
    let hashes: Vec<u64> =
        token_hashes.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))).collect();
    let minima = py.detach(|| bin_minima_of(&hashes, bins));
    let bytes: Vec<u8> = minima.iter().flat_map(|m| m.to_le_bytes()).collect();
    Ok(PyBytes::new(py, &bytes))
}

/// `packed_sketch(token_hashes, bins, bits)`: the lowest `bits` of each bin, packed low bits first, bin i
/// in byte i * bits / 8 (`sketch.sketch_of_hashes` without its format byte).
#[pyfunction]
fn packed_sketch<'py>(py: Python<'py>, token_hashes: &[u8], bins: usize, bits: u32) -> PyResult<Bound<'py, PyBytes>> {
    check_shape(bins, bits)?;
    if token_hashes.len() % 8 != 0 {
        return Err(PyValueError::new_err("token_hashes must be little-endian uint64 values"));
    }
    let hashes: Vec<u64> =
        token_hashes.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))).collect();
    let packed = py.detach(|| packed_sketch_of(&hashes, bins, bits));
    Ok(PyBytes::new(py, &packed))
}

fn check_shape(bins: usize, bits: u32) -> PyResult<()> {
    if ![1, 2, 4, 8].contains(&bits) || !(8..=1 << 16).contains(&bins) || !bins.is_power_of_two() {
        return Err(PyValueError::new_err(format!("unsupported sketch shape: {bins} bins of {bits} bits")));
    }
    Ok(())
}

fn packed_sketch_of(token_hashes: &[u64], bins: usize, bits: u32) -> Vec<u8> {
    pack(&bin_minima_of(token_hashes, bins), bits)
}

/// Bins of `bits` bits packed low bits first, `8 / bits` to a byte (`sketch.sketch_of_hashes`).
fn pack(minima: &[u64], bits: u32) -> Vec<u8> {
    let per_byte = (8 / bits) as usize;
    let mask = (1u64 << bits) - 1;
    minima
        .chunks_exact(per_byte)
        .map(|group| group.iter().enumerate().fold(0u8, |byte, (k, m)| byte | (((m & mask) as u8) << (k as u32 * bits))))
        .collect()
}

/// renames.py's space: the characters Python's `str.isspace` calls white space.
const fn is_space(ch: char) -> bool {
    matches!(ch, ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c' | '\x1c'..='\x1f' | '\u{85}' | '\u{a0}' | '\u{1680}'
        | '\u{2000}'..='\u{200a}' | '\u{2028}' | '\u{2029}' | '\u{202f}' | '\u{205f}' | '\u{3000}')
}

/// `agreeing_bins(a, b, start, end, bits)`: how many of the `bits`-bit bins packed in `a[start..end]` hold
/// the value of the same bin in `b[start..end]` (sketch.py's `jaccard` counts them with numpy).
#[pyfunction]
fn agreeing_bins(a: &[u8], b: &[u8], start: usize, end: usize, bits: u32) -> PyResult<usize> {
    let low: u64 = match bits {
        1 => !0,
        2 => 0x5555_5555_5555_5555,
        4 => 0x1111_1111_1111_1111,
        8 => 0x0101_0101_0101_0101,
        _ => return Err(PyValueError::new_err(format!("bits: 1, 2, 4 or 8, got {bits}"))),
    };
    if start > end || end > a.len() || end > b.len() {
        return Err(PyValueError::new_err(format!("start, end: {start}..{end} is not a range of both sketches")));
    }
    let (a, b) = (&a[start..end], &b[start..end]);
    // Eight bytes at a time: a bin differs where any of its bits does, so each bin's bits are ORed onto its
    // lowest (shifts within the bin only reach its own bits there) and those are counted.
    let differing = |x: u64, y: u64| {
        let mut d = x ^ y;
        let mut shift = 1;
        while shift < bits {
            d |= d >> shift;
            shift <<= 1;
        }
        (d & low).count_ones() as usize
    };
    let word = |bytes: &[u8]| {
        let mut eight = [0u8; 8];
        eight[..bytes.len()].copy_from_slice(bytes);
        u64::from_le_bytes(eight)
    };
    let mut unequal = 0;
    for (x, y) in a.chunks(8).zip(b.chunks(8)) {
        unequal += differing(word(x), word(y));
    }
    Ok(a.len() * 8 / bits as usize - unequal)
}

/// renames.py's text with every run of ASCII digits read as "0" (borrowed when it has no digit).
fn fold_digit_runs(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.bytes().any(|b| b.is_ascii_digit()) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = Vec::with_capacity(text.len());
    let mut digits = false;
    for &b in text.as_bytes() {
        let digit = b.is_ascii_digit();
        if !(digit && digits) {
            out.push(if digit { b'0' } else { b });
        }
        digits = digit;
    }
    // Only ASCII digits were replaced, by an ASCII digit: still UTF-8.
    std::borrow::Cow::Owned(String::from_utf8(out).expect("UTF-8 in, UTF-8 out"))
}

/// renames.py's units of a text whose digit runs are folded: each run of ASCII lowercase letters and
/// digits, and each other character but spaces.  ASCII is read a byte at a time, the rest a character.
fn rename_units(text: &str) -> Vec<&str> {
    let bytes = text.as_bytes();
    let mut units = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let b = bytes[at];
        if b.is_ascii_lowercase() || b.is_ascii_digit() {
            let start = at;
            while at < bytes.len() && (bytes[at].is_ascii_lowercase() || bytes[at].is_ascii_digit()) {
                at += 1;
            }
            units.push(&text[start..at]);
            continue;
        }
        let width = if b < 0x80 { 1 } else { text[at..].chars().next().map_or(1, char::len_utf8) };
        let ch = if b < 0x80 { b as char } else { text[at..].chars().next().expect("a character here") };
        if !is_space(ch) {
            units.push(&text[at..at + width]);
        }
        at += width;
    }
    units
}

fn low32(bytes: &[u8]) -> u32 {
    (xxh3_64(bytes) & 0xFFFF_FFFF) as u32
}

/// renames.py's trailer of a normalised text.
fn renames_of(normalized: &str, words: usize, contexts: usize, repeated: usize) -> Vec<u8> {
    let folded = fold_digit_runs(normalized);
    let units = rename_units(&folded);
    let is_word = |unit: &str| {
        let first = unit.as_bytes()[0];
        (first.is_ascii_lowercase() || first.is_ascii_digit()) && unit != "0"
    };
    // Words counted by their XXH3-64 through a pass-through hasher; the word is kept and compared, and a word
    // whose hash another word holds already is counted apart, so no two words ever share a count.
    type ByHash<V> = HashMap<u64, V, BuildHasherDefault<PassThrough>>;
    let keys: Vec<u64> = units.iter().map(|u| if is_word(u) { xxh3_64(u.as_bytes()) } else { 0 }).collect();
    let mut counts: ByHash<(&str, usize)> = HashMap::default();
    let mut collided: HashMap<&str, usize> = HashMap::new();
    for (&unit, &key) in units.iter().zip(&keys) {
        if key == 0 && !is_word(unit) {
            continue;
        }
        let entry = counts.entry(key).or_insert((unit, 0));
        if entry.0 == unit {
            entry.1 += 1;
        } else {
            *collided.entry(unit).or_insert(0) += 1;
        }
    }
    let mut chosen: Vec<(&str, usize)> =
        counts.into_values().chain(collided).filter(|&(_, n)| n >= repeated).collect();
    chosen.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    chosen.truncate(words);
    let mut place: ByHash<Vec<usize>> = HashMap::default();
    for (k, &(w, _)) in chosen.iter().enumerate() {
        place.entry(xxh3_64(w.as_bytes())).or_default().push(k);
    }
    let mut found: Vec<Vec<u32>> = vec![Vec::new(); chosen.len()];
    let last = units.len().saturating_sub(1);
    let mut around: Vec<u8> = Vec::new();
    for (i, (&unit, &key)) in units.iter().zip(&keys).enumerate() {
        let Some(candidates) = place.get(&key) else { continue };
        let Some(&k) = candidates.iter().find(|&&k| chosen[k].0 == unit) else { continue };
        if found[k].len() >= contexts {
            continue;
        }
        around.clear();
        if i > 0 {
            around.extend_from_slice(units[i - 1].as_bytes());
        }
        around.push(0);
        if i < last {
            around.extend_from_slice(units[i + 1].as_bytes());
        }
        let hash = low32(&around);
        if !found[k].contains(&hash) {
            found[k].push(hash);
        }
    }
    // Python keys its map by the word's hash: a second word of the same hash replaces the first in place.
    let mut by_hash: Vec<(u32, Vec<u32>)> = Vec::with_capacity(chosen.len());
    for (k, &(word, _)) in chosen.iter().enumerate() {
        let hash = low32(word.as_bytes());
        let mut sorted = std::mem::take(&mut found[k]);
        sorted.sort_unstable();
        match by_hash.iter_mut().find(|(h, _)| *h == hash) {
            Some(entry) => entry.1 = sorted,
            None => by_hash.push((hash, sorted)),
        }
    }
    let mut out = vec![by_hash.len() as u8];
    for (hash, around) in by_hash {
        out.extend_from_slice(&hash.to_be_bytes());
        out.push(around.len() as u8);
        for c in around {
            out.extend_from_slice(&c.to_be_bytes());
        }
    }
    out
}

/// `renames_trailer(normalized, words, contexts, repeated)`: renames.py's `trailer`.
#[pyfunction]
fn renames_trailer<'py>(
    py: Python<'py>,
    normalized: &str,
    words: usize,
    contexts: usize,
    repeated: usize,
) -> PyResult<Bound<'py, PyBytes>> {
    if words > 255 || contexts > 255 {
        return Err(PyValueError::new_err("words and contexts: at most 255, a count byte each"));
    }
    let out = py.detach(|| renames_of(normalized, words, contexts, repeated));
    Ok(PyBytes::new(py, &out))
}

/// A renames trailer read: its words' hashes, and for word k its contexts at `contexts[spans[k].0..spans[k].1]`,
/// sorted and distinct.  One flat list: a verified query reads a trailer per candidate.
struct Trailer {
    words: Vec<u32>,
    spans: Vec<(usize, usize)>,
    contexts: Vec<u32>,
}

impl Trailer {
    /// The trailer in `value`, or None when the bytes are not one.  As Python's map: a word given twice keeps
    /// its first place and its last contexts.
    fn parse(value: &[u8]) -> Option<Trailer> {
        let read = |at: usize| value.get(at..at + 4).map(|b| u32::from_be_bytes(b.try_into().expect("4")));
        let count = *value.first()? as usize;
        let mut out = Trailer { words: Vec::with_capacity(count), spans: Vec::with_capacity(count), contexts: Vec::new() };
        let mut at = 1;
        for _ in 0..count {
            let word = read(at)?;
            let n = *value.get(at + 4)? as usize;
            at += 5;
            let begin = out.contexts.len();
            for c in 0..n {
                out.contexts.push(read(at + 4 * c)?);
            }
            at += 4 * n;
            let new = &mut out.contexts[begin..];
            if !new.windows(2).all(|w| w[0] < w[1]) {
                new.sort_unstable();
                let mut kept = begin;
                for r in begin..out.contexts.len() {
                    if kept == begin || out.contexts[r] != out.contexts[kept - 1] {
                        out.contexts[kept] = out.contexts[r];
                        kept += 1;
                    }
                }
                out.contexts.truncate(kept);
            }
            let span = (begin, out.contexts.len());
            match out.words.iter().position(|&w| w == word) {
                Some(k) => out.spans[k] = span,
                None => {
                    out.words.push(word);
                    out.spans.push(span);
                }
            }
        }
        Some(out)
    }

    fn around(&self, k: usize) -> &[u32] {
        &self.contexts[self.spans[k].0..self.spans[k].1]
    }

    fn place(&self, word: u32) -> Option<usize> {
        self.words.iter().position(|&w| w == word)
    }
}

/// `renamed(a, b)`: renames.py's `renamed` of two trailers (the bytes after a format 5 sketch's parts).
#[pyfunction]
fn renamed(a: &[u8], b: &[u8], least: usize) -> PyResult<bool> {
    let (Some(a), Some(b)) = (Trailer::parse(a), Trailer::parse(b)) else {
        return Err(PyValueError::new_err("not a renames trailer"));
    };
    Ok(renamed_words(&a, &b, least))
}

/// Whether a word x of `a` and another word y of `b` share `least` contexts that `a` does not have for y nor
/// `b` for x.  A verified query asks this of every candidate: `b`'s contexts are looked up once each, through
/// one sorted list of (context, word), rather than each pair of words intersected.
fn renamed_words(a: &Trailer, b: &Trailer, least: usize) -> bool {
    let y_in_a: Vec<Option<usize>> = b.words.iter().map(|&y| a.place(y)).collect();
    let mut by_context: Vec<(u32, usize)> = Vec::with_capacity(b.contexts.len());
    for k in 0..b.words.len() {
        by_context.extend(b.around(k).iter().map(|&c| (c, k)));
    }
    by_context.sort_unstable();
    let mut shared = vec![0usize; b.words.len()];
    for (i, &x) in a.words.iter().enumerate() {
        let x_in_b = b.place(x).map(|k| b.around(k));
        shared.fill(0);
        for c in a.around(i) {
            if x_in_b.is_some_and(|around| around.binary_search(c).is_ok()) {
                continue;
            }
            let from = by_context.partition_point(|&(d, _)| d < *c);
            for &(_, k) in by_context[from..].iter().take_while(|&&(d, _)| d == *c) {
                if b.words[k] == x || y_in_a[k].is_some_and(|j| a.around(j).binary_search(c).is_ok()) {
                    continue;
                }
                shared[k] += 1;
                if shared[k] >= least {
                    return true;
                }
            }
        }
    }
    false
}

#[pymodule]
fn simhash_native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Fingerprinter>()?;
    m.add_function(wrap_pyfunction!(bin_minima, m)?)?;
    m.add_function(wrap_pyfunction!(packed_sketch, m)?)?;
    m.add_function(wrap_pyfunction!(renames_trailer, m)?)?;
    m.add_function(wrap_pyfunction!(renamed, m)?)?;
    m.add_function(wrap_pyfunction!(agreeing_bins, m)?)?;
    Ok(())
}
