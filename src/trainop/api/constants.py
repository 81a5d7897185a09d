"""Every label, annotation, condition and env-var name the project shares (contract §1.2, §3, §4.1).

Pure data: no imports beyond the standard library, so every layer may use it.
"""

from typing import Final

GROUP: Final = "kubeflow.org"
VERSION: Final = "v1"
API_VERSION: Final = "kubeflow.org/v1"

# Labels (§1.2); shared with the SDK.
LABEL_OPERATOR_NAME: Final = "training.kubeflow.org/operator-name"
LABEL_JOB_NAME: Final = "training.kubeflow.org/job-name"
LABEL_REPLICA_TYPE: Final = "training.kubeflow.org/replica-type"
LABEL_REPLICA_INDEX: Final = "training.kubeflow.org/replica-index"
LABEL_JOB_ROLE: Final = "training.kubeflow.org/job-role"
JOB_ROLE_MASTER: Final = "master"
LABEL_APP: Final = "app"  # MPI's ConfigMap / ServiceAccount label (§3.9)
LABEL_KUEUE_QUEUE: Final = "kueue.x-k8s.io/queue-name"

ANNOTATION_ISTIO_INJECT: Final = "sidecar.istio.io/inject"
# trainop's own: when `trainop run` was interrupted (Ctrl-C, SIGTERM); the job is kept, suspended.
ANNOTATION_INTERRUPTED: Final = "trainop.dev/interrupted"
# trainop's own: the `trainop run` process a local job is attached to (pid, start time, boot, as JSON);
# its supervisor stops the unfinished job once that process is gone (backends/local/attach.py).
ANNOTATION_ATTACHED_CLIENT: Final = "trainop.dev/attached-client"

# runPolicy.managedBy (§1.2, §4.11)
MANAGED_BY_OPERATOR: Final = "kubeflow.org/training-operator"
MANAGED_BY_MULTIKUEUE: Final = "kueue.x-k8s.io/multikueue"
MANAGED_BY_VALUES: Final = (MANAGED_BY_OPERATOR, MANAGED_BY_MULTIKUEUE)

# Condition types (§4.1)
COND_CREATED: Final = "Created"
COND_RUNNING: Final = "Running"
COND_RESTARTING: Final = "Restarting"
COND_SUCCEEDED: Final = "Succeeded"
COND_FAILED: Final = "Failed"
COND_SUSPENDED: Final = "Suspended"
CONDITION_TYPES: Final = (
    COND_CREATED,
    COND_RUNNING,
    COND_RESTARTING,
    COND_SUCCEEDED,
    COND_FAILED,
    COND_SUSPENDED,
)

# Restart policies (§1.2)
RESTART_ALWAYS: Final = "Always"
RESTART_ON_FAILURE: Final = "OnFailure"
RESTART_NEVER: Final = "Never"
RESTART_EXIT_CODE: Final = "ExitCode"
RESTART_POLICIES: Final = (RESTART_ALWAYS, RESTART_ON_FAILURE, RESTART_NEVER, RESTART_EXIT_CODE)

# cleanPodPolicy (§4.8)
CLEAN_ALL: Final = "All"
CLEAN_RUNNING: Final = "Running"
CLEAN_NONE: Final = "None"
CLEAN_POD_POLICIES: Final = (CLEAN_ALL, CLEAN_RUNNING, CLEAN_NONE)

# Exit code sentinel when the default container has not terminated (§4.5)
EXIT_CODE_UNSET: Final = 0xBEEF

# Env vars injected by plugins (§3.3-§3.9)
ENV_PYTHONUNBUFFERED: Final = "PYTHONUNBUFFERED"
ENV_MASTER_ADDR: Final = "MASTER_ADDR"
ENV_MASTER_PORT: Final = "MASTER_PORT"
ENV_WORLD_SIZE: Final = "WORLD_SIZE"
ENV_RANK: Final = "RANK"
ENV_PET_MASTER_ADDR: Final = "PET_MASTER_ADDR"
ENV_PET_MASTER_PORT: Final = "PET_MASTER_PORT"
ENV_PET_NODE_RANK: Final = "PET_NODE_RANK"
ENV_PET_NPROC_PER_NODE: Final = "PET_NPROC_PER_NODE"
ENV_PET_NNODES: Final = "PET_NNODES"
ENV_PET_RDZV_ENDPOINT: Final = "PET_RDZV_ENDPOINT"
ENV_PET_RDZV_BACKEND: Final = "PET_RDZV_BACKEND"
ENV_PET_MAX_RESTARTS: Final = "PET_MAX_RESTARTS"
ENV_PET_RDZV_ID: Final = "PET_RDZV_ID"
ENV_PET_RDZV_CONF: Final = "PET_RDZV_CONF"
ENV_PET_STANDALONE: Final = "PET_STANDALONE"
ENV_TF_CONFIG: Final = "TF_CONFIG"
ENV_WORKER_PORT: Final = "WORKER_PORT"
ENV_WORKER_ADDRS: Final = "WORKER_ADDRS"
ENV_PADDLE_JOB_ID: Final = "PADDLE_JOB_ID"
ENV_PADDLE_NNODES: Final = "PADDLE_NNODES"
ENV_PADDLE_MASTER: Final = "PADDLE_MASTER"
ENV_POD_IP_DUMMY: Final = "POD_IP_DUMMY"
ENV_PADDLE_SERVER_NUM: Final = "PADDLE_SERVER_NUM"
ENV_PADDLE_TRAINER_NUM: Final = "PADDLE_TRAINER_NUM"
ENV_COORDINATOR_ADDRESS: Final = "COORDINATOR_ADDRESS"
ENV_COORDINATOR_PORT: Final = "COORDINATOR_PORT"
ENV_NUM_PROCESSES: Final = "NUM_PROCESSES"
ENV_PROCESS_ID: Final = "PROCESS_ID"
ENV_OMPI_RSH_AGENT: Final = "OMPI_MCA_plm_rsh_agent"
ENV_OMPI_HOSTFILE: Final = "OMPI_MCA_orte_default_hostfile"
ENV_NVIDIA_VISIBLE_DEVICES: Final = "NVIDIA_VISIBLE_DEVICES"
ENV_NVIDIA_DRIVER_CAPABILITIES: Final = "NVIDIA_DRIVER_CAPABILITIES"
ENV_I_MPI_HYDRA_BOOTSTRAP: Final = "I_MPI_HYDRA_BOOTSTRAP"
ENV_I_MPI_HYDRA_BOOTSTRAP_EXEC: Final = "I_MPI_HYDRA_BOOTSTRAP_EXEC"

# Local backend (docs/local-backend.md): its settings and the env/resource names it reads or injects.
ENV_TRAINOP_HOME: Final = "TRAINOP_HOME"  # state directory; default ${XDG_DATA_HOME:-~/.local/share}/trainop
ENV_TRAINOP_GPUS: Final = "TRAINOP_GPUS"  # GPU inventory override, e.g. "0,1" ("" = no GPU)
# The local backend's counterpart of the operator's --gang-scheduler-name: only "yunikorn" (its pod
# labels and annotations; the local backend gangs the pods itself, backends/local/gang.py).
ENV_TRAINOP_GANG_SCHEDULER_NAME: Final = "TRAINOP_GANG_SCHEDULER_NAME"
ENV_TRAINOP_PRIORITY_CLASSES: Final = "TRAINOP_PRIORITY_CLASSES"  # local values: "high=1000,low=-10"
ENV_TRAINOP_RESTART_BACKOFF_MAX: Final = "TRAINOP_RESTART_BACKOFF_MAX"  # seconds; local default 10
ENV_TRAINOP_SUPERVISOR_GIVE_UP: Final = "TRAINOP_SUPERVISOR_GIVE_UP"  # seconds of errors; local default 60
ENV_TRAINOP_JOB_UID: Final = "TRAINOP_JOB_UID"  # set on every local replica process: the job it belongs to
ENV_CUDA_VISIBLE_DEVICES: Final = "CUDA_VISIBLE_DEVICES"
RESOURCE_NVIDIA_GPU: Final = "nvidia.com/gpu"

# Local backend: env defaults that keep a framework's own traffic on the loopback interface
# (docs/local-backend.md, "Loopback only"); a variable the user set is never overridden.
LOOPBACK_IFNAME: Final = "lo"
ENV_OMPI_OOB_TCP_IF_INCLUDE: Final = "OMPI_MCA_oob_tcp_if_include"
ENV_OMPI_OOB_TCP_IF_EXCLUDE: Final = "OMPI_MCA_oob_tcp_if_exclude"
ENV_OMPI_BTL_TCP_IF_INCLUDE: Final = "OMPI_MCA_btl_tcp_if_include"
# Open MPI keeps its session directories under $TMPDIR; locally each MPIJob replica gets its own.
ENV_TMPDIR: Final = "TMPDIR"
ENV_OMPI_BTL_TCP_IF_EXCLUDE: Final = "OMPI_MCA_btl_tcp_if_exclude"
ENV_GLOO_SOCKET_IFNAME: Final = "GLOO_SOCKET_IFNAME"
ENV_NCCL_SOCKET_IFNAME: Final = "NCCL_SOCKET_IFNAME"
ENV_TP_SOCKET_IFNAME: Final = "TP_SOCKET_IFNAME"
ENV_POD_IP: Final = "POD_IP"  # paddle.distributed.launch's own address (its --host)
ENV_JAX_COORDINATOR_BIND_ADDRESS: Final = "JAX_COORDINATOR_BIND_ADDRESS"

# trainop's own job annotations (docs/failure-policy.md): whole-job restart, failure rules and start
# deadlines, beyond upstream v1. Annotations, not spec fields, so upstream's CRDs (whose structural
# schemas prune unknown spec fields, §1.1) accept the same manifest unchanged and upstream's operator
# ignores them.
ANNOTATION_FAILURE_POLICY: Final = "trainop.dev/failure-policy"  # ordered rules, YAML or JSON
ANNOTATION_MAX_RESTARTS: Final = "trainop.dev/max-restarts"  # whole-job restarts before Failed
ANNOTATION_RESTART_STRATEGY: Final = "trainop.dev/restart-strategy"  # Recreate | BlockingRecreate
ANNOTATION_STARTUP_DEADLINE: Final = "trainop.dev/startup-deadline-seconds"
ANNOTATION_START_ERROR_DEADLINE: Final = "trainop.dev/start-error-deadline-seconds"
FAILURE_POLICY_ANNOTATIONS: Final = (
    ANNOTATION_FAILURE_POLICY,
    ANNOTATION_MAX_RESTARTS,
    ANNOTATION_RESTART_STRATEGY,
    ANNOTATION_STARTUP_DEADLINE,
    ANNOTATION_START_ERROR_DEADLINE,
)
# On every pod of a job with a failure policy: the effective policy (defaults filled in) as compact
# JSON, so ``trainop render`` and ``kubectl get pod -o yaml`` show the rules in force at its creation.
ANNOTATION_EFFECTIVE_FAILURE_POLICY: Final = "trainop.dev/effective-failure-policy"
# On every pod of a job with a restart policy: the whole-job restart that created it (JobSet's
# jobset.sigs.k8s.io/restart-attempt); pods of an older attempt are the ones being replaced.
LABEL_RESTART_ATTEMPT: Final = "trainop.dev/restart-attempt"
# The status condition that counts whole-job restarts (upstream's status schema prunes new fields,
# but a condition's type is a free string).
COND_JOB_RESTARTS: Final = "JobRestarts"

# --- Kubeflow Trainer v2: trainer.kubeflow.org/v1alpha1 (TrainJob and training runtimes) -----------
# Facts from kubeflow/trainer@v2.3.0 pkg/apis/trainer/v1alpha1 and pkg/constants/constants.go.
TRAINER_GROUP: Final = "trainer.kubeflow.org"
TRAINER_VERSION: Final = "v1alpha1"
TRAINER_API_VERSION: Final = "trainer.kubeflow.org/v1alpha1"
KIND_TRAINJOB: Final = "TrainJob"
KIND_TRAINING_RUNTIME: Final = "TrainingRuntime"
KIND_CLUSTER_TRAINING_RUNTIME: Final = "ClusterTrainingRuntime"
TRAINER_KINDS: Final = (KIND_TRAINJOB, KIND_TRAINING_RUNTIME, KIND_CLUSTER_TRAINING_RUNTIME)
# spec.managedBy of a TrainJob (immutable; Kueue's MultiKueue takes over the other value).
MANAGED_BY_TRAINJOB_CONTROLLER: Final = "trainer.kubeflow.org/trainjob-controller"
TRAINJOB_MANAGED_BY_VALUES: Final = (MANAGED_BY_TRAINJOB_CONTROLLER, MANAGED_BY_MULTIKUEUE)
# The label that ties a runtime's replicated job to the TrainJob field that overrides it.
LABEL_TRAINJOB_ANCESTOR: Final = "trainer.kubeflow.org/trainjob-ancestor-step"
ANCESTOR_DATASET_INITIALIZER: Final = "dataset-initializer"
ANCESTOR_MODEL_INITIALIZER: Final = "model-initializer"
ANCESTOR_TRAINER: Final = "trainer"
# The container each ancestor's job must hold (the webhook's expectedContainerNames).
NODE: Final = "node"  # the trainer's replicated job and container
LAUNCHER: Final = "launcher"  # MPI's launcher job
TRAINER_PORT: Final = 29500  # constants.ContainerTrainerPort
VOLUME_INITIALIZER: Final = "initializer"
ENV_STORAGE_URI: Final = "STORAGE_URI"
# TrainJob condition types and reasons (trainjob_types.go).
COND_TRAINJOB_COMPLETE: Final = "Complete"
REASON_SUSPENDED: Final = "Suspended"
REASON_RESUMED: Final = "Resumed"
REASON_RUNTIME_NOT_SUPPORTED: Final = "TrainingRuntimeNotSupported"
REASON_DEADLINE_EXCEEDED: Final = "DeadlineExceeded"
# JobSet's condition reasons, which upstream copies into the TrainJob's Complete and Failed conditions.
REASON_ALL_JOBS_COMPLETED: Final = "AllJobsCompleted"
REASON_FAILED_JOBS: Final = "FailedJobs"
REASON_REACHED_MAX_RESTARTS: Final = "ReachedMaxRestarts"  # failurePolicy.maxRestarts spent
# JobSet's pod labels and annotations the addressing and tooling read (JobSet v0.8+).
LABEL_JOBSET_NAME: Final = "jobset.sigs.k8s.io/jobset-name"
LABEL_REPLICATED_JOB_NAME: Final = "jobset.sigs.k8s.io/replicatedjob-name"
LABEL_JOB_INDEX: Final = "jobset.sigs.k8s.io/job-index"
# JobSet's restart attempt (its status.restarts when the pod's Job was made), label and annotation.
LABEL_JOBSET_RESTART_ATTEMPT: Final = "jobset.sigs.k8s.io/restart-attempt"
# Where trainop keeps JobSet's status.restarts without a JobSet: on the TrainJob, since upstream's
# TrainJob status schema has no field for it (its CRD would prune one).
ANNOTATION_JOBSET_RESTARTS: Final = "trainop.dev/jobset-restarts"
ANNOTATION_JOB_COMPLETION_INDEX: Final = "batch.kubernetes.io/job-completion-index"
LABEL_JOB_COMPLETION_INDEX: Final = "batch.kubernetes.io/job-completion-index"
# The downward-API path upstream's plugins read the node rank from.
FIELD_JOB_COMPLETION_INDEX: Final = "metadata.annotations['batch.kubernetes.io/job-completion-index']"
# Env each ML policy injects (pkg/constants/constants.go).
ENV_JAX_NUM_PROCESSES: Final = "JAX_NUM_PROCESSES"
ENV_JAX_PROCESS_ID: Final = "JAX_PROCESS_ID"
ENV_JAX_COORDINATOR_ADDRESS: Final = "JAX_COORDINATOR_ADDRESS"
ENV_DMLC_TRACKER_URI: Final = "DMLC_TRACKER_URI"
ENV_DMLC_TRACKER_PORT: Final = "DMLC_TRACKER_PORT"
ENV_DMLC_TASK_ID: Final = "DMLC_TASK_ID"
ENV_DMLC_NUM_WORKER: Final = "DMLC_NUM_WORKER"
ENV_OMPI_RSH_ARGS: Final = "OMPI_MCA_plm_rsh_args"
ENV_OMPI_KEEP_FQDN: Final = "OMPI_MCA_orte_keep_fqdn_hostnames"
ENV_OMPI_DEFAULT_SLOTS: Final = "OMPI_MCA_orte_set_default_slots"
OMPI_RSH_ARGS_DEFAULT: Final = "-o ConnectionAttempts=10"
MPI_HOSTFILE_DIR: Final = "/etc/mpi"
MPI_HOSTFILE_NAME: Final = "hostfile"
MPI_HOSTFILE_SUFFIX: Final = "-mpi-hostfile"
MPI_HOSTFILE_VOLUME: Final = "mpi-hostfile"
MPI_SSH_AUTH_SUFFIX: Final = "-mpi-ssh-auth"
MPI_SSH_AUTH_VOLUME: Final = "mpi-ssh-auth"
TORCH_RESERVED_ENV: Final = (
    ENV_PET_NNODES,
    ENV_PET_NPROC_PER_NODE,
    ENV_PET_NODE_RANK,
    ENV_PET_MASTER_ADDR,
    ENV_PET_MASTER_PORT,
)
MPI_RESERVED_ENV: Final = (ENV_OMPI_HOSTFILE, ENV_OMPI_RSH_ARGS, ENV_OMPI_KEEP_FQDN, ENV_OMPI_DEFAULT_SLOTS)
XGBOOST_RESERVED_ENV: Final = (
    ENV_DMLC_TRACKER_URI,
    ENV_DMLC_TRACKER_PORT,
    ENV_DMLC_TASK_ID,
    ENV_DMLC_NUM_WORKER,
)
# Trainer v2's progress contract (KEP-2779): where a replica posts its trainerStatus, the CA that
# signs that server and the file holding the bearer token. trainop.trainer_progress posts to it.
ENV_TRAINER_SERVER_URL: Final = "KUBEFLOW_TRAINER_SERVER_URL"
ENV_TRAINER_SERVER_CA_CERT: Final = "KUBEFLOW_TRAINER_SERVER_CA_CERT"
ENV_TRAINER_SERVER_TOKEN: Final = "KUBEFLOW_TRAINER_SERVER_TOKEN"
# trainop's own: which replica (rank) a progress post comes from, so each rank gets its own curve.
HEADER_PROGRESS_REPLICA: Final = "X-Trainop-Replica"
# trainop's own: the latest trainerStatus of a v1 job on a cluster, as JSON (its status has no field).
ANNOTATION_TRAINER_STATUS: Final = "trainop.dev/trainer-status"
