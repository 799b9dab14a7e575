mod admission;
mod compaction;
mod context;
mod interrupt;
mod loop_;
mod recovery;
mod registry;
mod support;
