//! Executors other than the emulator: the GPU (through `cudarc`, loaded at run time) and the
//! instruction paths it can run. Only this module touches CUDA.

pub mod gpu;
pub mod layout;
pub mod library;
pub mod lt_log;
pub mod paths;
pub mod ptx;
pub mod simulated;

pub use gpu::{Gpu, GpuError, GpuInfo};
pub use paths::{path_by_id, Module, PathSpec, PATHS};
