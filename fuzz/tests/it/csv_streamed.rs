//! A matrix file is read line by line (`csv::read_matrix`, two passes over the file) with
//! the answers of reading its text whole (`read_input` and `csv::parse_matrix`): the same
//! matrix, or the same error at the same line, for every seed of the CSV target, for
//! layouts and errors made here, and for those edited byte by byte.

use std::path::Path;

use topoprobe_model::format::{csv, read_input};

/// What reading the whole text answers, as text to compare.
fn whole(path: &Path) -> String {
    match read_input(path).and_then(|text| csv::parse_matrix(&text, path)) {
        Ok(m) => format!("{m:?}"),
        Err(e) => format!("error: {e}"),
    }
}

/// What reading line by line answers.
fn streamed(path: &Path) -> String {
    match csv::read_matrix(path) {
        Ok(m) => format!("{m:?}"),
        Err(e) => format!("error: {e}"),
    }
}

/// Inputs with every layout and every error the reader knows.
fn made() -> Vec<Vec<u8>> {
    let texts: &[&str] = &[
        ",10,20\n10,,30\n20,30,\n",
        ",10,20\r\n10,,30\r\n20,30,\r\n",
        " , 10 , 20 \n10,,30\n20,30,",
        ",10,20\n10,,30\n20,30,\n\n  \n\r\n",
        "\u{feff},10,20\n10,,30\n20,30,\n",
        "\u{feff}\n10\n20,30\n",
        "0,10,20\n10,0,30\n20,30,0\n",
        ",10,20,,\n10,,30,\n20,30,\n",
        ",,\n10,,\n20,30,\n",
        "\n10\n20,30\n",
        "\n10,\n20,30,",
        ",10,20\n,,30\n,,\n",
        ",10,20\r10,,30\r20,30,\r",
        ",10,20\r10,,30\r\r\n20,30,\r",
        "a\r\r\nb",
        "",
        "\n",
        "\r\n\r\n",
        "  ",
        ",1\n",
        "0,10,20\n\n10,0,20\n20,20,0\n",
        "0,10,20\n10,0,20\n \r\n20,20,0\n",
        "\n\n{\"format\": 1}",
        "  # host #HWCs 2",
        "[1,2]",
        ",10,x\n10,,30\n20,30,\n",
        ",10;20\n10;;30\n20;30;\n",
        ",10,20,30\n10,,30\n20,30,\n",
        ",10,20,5\n10,,30,\n20,30,,\n",
        ",10\n10,\n10,\n",
        ",10,20\n10,,30\n",
        ",-1,20\n10,,30\n20,30,\n",
        ",10,20\n10,5,30\n20,30,\n",
        ",10,1e13\n10,,30\n20,30,\n",
        ",NaN,20\n10,,30\n20,30,\n",
        ",,\n,,\n,,30\n",
        "\n10\n20,30,40\n",
        ",10,20\n10\n20,30,\n",
        "cpu,a,b\n,1,2\n1,,3\n2,3,\n",
    ];
    let mut inputs: Vec<Vec<u8>> = texts.iter().map(|t| t.as_bytes().to_vec()).collect();
    // Not text: a NUL byte, bytes that are not UTF-8, and both (the NUL after).
    inputs.push(b",10\n1\x000,\n".to_vec());
    inputs.push(b",10\n\xff0,\n".to_vec());
    inputs.push(b",10\n\xff0,\n,,\n\n\x00\n".to_vec());
    inputs.push(b"\n\n\n,10\n\n10,\n\xc3".to_vec());
    // A blank line inside, then a byte that is not text further on.
    inputs.push(b",10\n\n10,\n\xfe\n".to_vec());
    inputs
}

/// A number that looks random, from a state.
fn next(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// `input` with a few bytes replaced, inserted or removed: line ends, commas, digits,
/// blanks and bytes that are not text.
fn edited(input: &[u8], state: &mut u64) -> Vec<u8> {
    const BYTES: &[u8] = b"\n\r,,, 0123456789.\t\xff\x00e-";
    let mut out = input.to_vec();
    for _ in 0..=next(state) % 3 {
        let at = (next(state) as usize) % (out.len() + 1);
        let byte = BYTES[(next(state) as usize) % BYTES.len()];
        match next(state) % 3 {
            0 if at < out.len() => out[at] = byte,
            1 if at < out.len() => {
                out.remove(at);
            }
            _ => out.insert(at, byte),
        }
    }
    out
}

#[test]
fn a_matrix_file_read_line_by_line_reads_as_its_whole_text() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let path = dir.path().join("m.csv");
    let seeds = Path::new(env!("CARGO_MANIFEST_DIR")).join("seeds/csv");
    let mut inputs = made();
    for entry in std::fs::read_dir(&seeds).expect("the CSV seeds") {
        let data = std::fs::read(entry.expect("an entry").path()).expect("a seed");
        if data.len() <= 1 << 20 {
            inputs.push(data);
        }
    }
    let mut state = 0x9E37_79B9_7F4A_7C15_u64;
    let mut compared = 0;
    for input in &inputs {
        for k in 0..40 {
            let data = if k == 0 {
                input.clone()
            } else {
                edited(input, &mut state)
            };
            std::fs::write(&path, &data).expect("written");
            assert_eq!(
                streamed(&path),
                whole(&path),
                "{:?}",
                String::from_utf8_lossy(&data)
            );
            compared += 1;
        }
    }
    assert!(compared > 2000, "{compared}");
}
