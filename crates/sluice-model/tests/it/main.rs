//! Black-box tests of `parse_request`: bytes in, envelope or error out.

mod batch;
mod enrichment;
mod fuzz;
mod limits;
mod merged;
mod required;
mod shapes;
mod stored;
mod support;
mod timestamps;
