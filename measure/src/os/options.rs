//! How the OS view is read: choices a caller can make ([`ReadOptions`]).

/// Options of [`super::read_os_view_with`] and [`super::read_os_view_at_with`]; the
/// default reads as hwloc does by default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadOptions {
    /// Keep the CPU-less NUMA nodes that hold an NVIDIA GPU's memory
    /// (`/proc/driver/nvidia/gpus/*/numa_status` names them). They are left out by
    /// default, with a note, as hwloc leaves them out unless
    /// `HWLOC_KEEP_NVIDIA_GPU_NUMA_NODES=1`: the memory belongs to the GPU, not to a
    /// place where threads run.
    pub keep_gpu_nodes: bool,
}
