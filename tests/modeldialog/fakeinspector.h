// A ModelInspector without the engine: a file is a model when it starts with "GGUF", and a model
// fits the GPU when its weights are under 3 GiB less the GPU reserve (device "cpu": CPU only).
// Counts its calls and remembers the last context and reserve.
#pragma once

#include <QFile>
#include <QList>
#include <QMutex>
#include <atomic>

#include "modelinspector.h"

class FakeInspector : public ModelInspector {
public:
    static constexpr qint64 kGpuBytes = 3ll << 30;

    struct Log {
        std::atomic<int> estimates{0};
        std::atomic<int> lastContext{0};
        std::atomic<bool> noGpu{false};      // every verdict: CPU only, there is no usable GPU
        std::atomic<quint64> gpuReserve{0};  // the last setGpuReserve()
        QMutex mutex;
        QList<qint64> weightBytes;  // of each estimateShape()
        QList<qint64> shapes() {
            QMutexLocker lock(&mutex);
            return weightBytes;
        }
    };
    explicit FakeInspector(std::shared_ptr<Log> log) : m_log(std::move(log)) {}

    ModelDetails inspect(const QString& path) override {
        ModelDetails d;
        QFile f(path);
        if (!f.open(QIODevice::ReadOnly) || f.read(4) != "GGUF") {
            d.error = QStringLiteral("%1: not a GGUF file").arg(path);
            d.errorSummary = QStringLiteral("this is not a GGUF model file");
            return d;
        }
        d.architecture = QStringLiteral("llama");
        d.parameters = 1000;
        d.quantization = QStringLiteral("F32");
        d.quantizationMix = QStringLiteral("F32 100%");
        d.fileSize = f.size();
        return d;
    }
    FitInfo estimateFile(const QString& path, int contextLength, const QString& device) override {
        return verdict(QFile(path).size(), contextLength, device);
    }
    FitInfo estimateEntry(const CatalogEntry& entry, int contextLength,
                          const QString& device) override {
        {
            QMutexLocker lock(&m_log->mutex);
            m_log->weightBytes << entry.size;
        }
        return verdict(entry.size, contextLength, device);
    }
    void setGpuReserve(quint64 bytes) override { m_log->gpuReserve = bytes; }

private:
    FitInfo verdict(qint64 bytes, int contextLength, const QString& device) {
        m_log->estimates++;
        m_log->lastContext = contextLength;
        FitInfo f;
        if (m_log->noGpu) {
            f.verdict = FitInfo::Verdict::CpuOnly;
            f.noGpu = true;
            f.cpuReason = QStringLiteral("the Vulkan loader found no device");
            f.detail = QStringLiteral("CPU only: ") + f.cpuReason;
            return f;
        }
        if (device == QLatin1String("cpu")) {
            f.verdict = FitInfo::Verdict::CpuOnly;
            f.detail = QStringLiteral("CPU only: the device setting is CPU");
            return f;
        }
        f.needed = bytes + contextLength;
        f.available = kGpuBytes - qint64(m_log->gpuReserve.load());
        f.verdict =
            f.needed < f.available ? FitInfo::Verdict::FitsGpu : FitInfo::Verdict::DoesNotFit;
        f.detail = QStringLiteral("fake estimate");
        return f;
    }
    std::shared_ptr<Log> m_log;
};
