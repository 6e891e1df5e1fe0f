// What the model dialog needs from the engine, as an interface so that the app's tests can run
// without it: a GGUF file's header details and fit estimates. EmberModelInspector implements it
// over the engine (ember_app_engine). Implementations are stateless: ModelInspectorWorker calls
// them on its own thread, ModelLibrary calls inspect() on the UI thread to validate a file.
#pragma once

#include <QMetaType>
#include <QString>

#include "catalog.h"

// What a GGUF header says about a model.
struct ModelDetails {
    QString error;         // set when the file is not a readable GGUF model; the rest is then empty
    QString errorSummary;  // the error in plain words ("the file is incomplete; download it again")
    QString architecture;
    QString name;             // general.name, may be empty
    qint64 parameters = 0;    // elements of all tensors
    QString quantization;     // the type holding most of the weight bytes, e.g. "Q4_0"
    QString quantizationMix;  // every type by share of the weight bytes: "Q4_0 97% · F32 3%"
    int contextLength = 0;    // trained context, 0 when the header does not say
    qint64 fileSize = 0;
    QString problem;  // why the engine cannot run it (architecture, tensor type), else empty
};
Q_DECLARE_METATYPE(ModelDetails)
Q_DECLARE_METATYPE(CatalogShape)

// Whether a model fits the device it would run on. Unknown with a detail: no estimate could
// be made (the detail says why; it is never shown as a verdict).
struct FitInfo {
    // DoesNotFit: not on the GPU (it would run on the CPU); NoMemory: not in RAM either.
    enum class Verdict { Unknown, FitsGpu, DoesNotFit, CpuOnly, NoMemory };
    Verdict verdict = Verdict::Unknown;
    qint64 needed = 0;     // bytes: weights + KV cache + scratch
    qint64 available = 0;  // bytes of the device's budget (of RAM for CpuOnly and NoMemory)
    QString device;        // the adapter considered
    QString detail;        // the engine's full message
    bool noGpu = false;    // there is no usable GPU at all
    QString cpuReason;     // why it would run on the CPU, when it would
    // DoesNotFit with 0 < gpuLayers < nLayers: partial offload, the last gpuLayers layers (and
    // the output layer) on the GPU, the others on the CPU.
    int gpuLayers = 0, nLayers = 0;

    // "gpu", "nofit", "cpu", "nomem", or "" while unknown: what QML compares.
    QString verdictName() const;
    // "fits on GPU", "does not fit: needs 4.3 GiB, 3.1 GiB free", "CPU only",
    // "partly fits: 16 of 32 layers on the GPU" (partial offload),
    // "does not fit in memory: needs 10.2 GiB, 8.0 GiB free".
    QString label() const;
};
Q_DECLARE_METATYPE(FitInfo)

class ModelInspector {
public:
    virtual ~ModelInspector() = default;
    virtual ModelDetails inspect(const QString& path) = 0;
    // device: "" (the best GPU), a GPU index, or "cpu".
    virtual FitInfo estimateFile(const QString& path, int contextLength, const QString& device) = 0;
    // A catalog entry by the file it would download: its shape and quantization.
    virtual FitInfo estimateEntry(const CatalogEntry& entry, int contextLength,
                                  const QString& device) = 0;
    // Bytes of the GPU the estimates leave free for other programs (the app's setting), as a
    // load does; set from any thread, used by the estimates after it.
    virtual void setGpuReserve(quint64 bytes) = 0;
};
