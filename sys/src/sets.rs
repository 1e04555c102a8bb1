//! The CPU and memory-node sets every crate of topoprobe uses to talk to the kernel.

use crate::id_set::id_set_type;

id_set_type!(
    /// A set of CPUs (operating-system CPU numbers), of any size: machines with more than
    /// 1024 CPUs (glibc's fixed `cpu_set_t`) work too.
    ///
    /// ```
    /// use topoprobe_sys::CpuSet;
    ///
    /// let s = CpuSet::parse_list("0-3,8").unwrap();
    /// assert_eq!(s.len(), 5);
    /// assert!(s.contains(8));
    /// assert_eq!(s.to_string(), "0-3,8");
    /// assert_eq!(s.to_words(), vec![0x10f]);
    /// ```
    CpuSet,
    "CPU"
);

id_set_type!(
    /// A set of memory (NUMA) nodes, in the kernel's node-mask layout.
    ///
    /// ```
    /// use topoprobe_sys::NodeSet;
    ///
    /// let s: NodeSet = [0, 2].into();
    /// assert_eq!(s.to_words(), vec![0b101]);
    /// ```
    NodeSet,
    "node"
);
