// User settings, persisted with QSettings and exposed to QML as properties.
#pragma once

#include <QtQml/qqmlregistration.h>
#include <QObject>
#include <QSettings>
#include <QString>

#include "chatengine.h"

class Settings : public QObject {
    Q_OBJECT
    QML_ELEMENT
    QML_UNCREATABLE("made by main.cpp")
    Q_PROPERTY(QString device READ device WRITE setDevice NOTIFY deviceChanged)
    Q_PROPERTY(int threads READ threads WRITE setThreads NOTIFY threadsChanged)
    Q_PROPERTY(
        int contextLength READ contextLength WRITE setContextLength NOTIFY contextLengthChanged)
    // "Leave N GiB of the GPU for other programs": loads and fit estimates keep it free.
    Q_PROPERTY(
        int gpuReserveGiB READ gpuReserveGiB WRITE setGpuReserveGiB NOTIFY gpuReserveGiBChanged)
    Q_PROPERTY(double temperature READ temperature WRITE setTemperature NOTIFY temperatureChanged)
    Q_PROPERTY(int topK READ topK WRITE setTopK NOTIFY topKChanged)
    Q_PROPERTY(double topP READ topP WRITE setTopP NOTIFY topPChanged)
    Q_PROPERTY(double minP READ minP WRITE setMinP NOTIFY minPChanged)
    Q_PROPERTY(
        double repeatPenalty READ repeatPenalty WRITE setRepeatPenalty NOTIFY repeatPenaltyChanged)
    Q_PROPERTY(int maxTokens READ maxTokens WRITE setMaxTokens NOTIFY maxTokensChanged)
    Q_PROPERTY(
        QString systemPrompt READ systemPrompt WRITE setSystemPrompt NOTIFY systemPromptChanged)
    Q_PROPERTY(QString theme READ theme WRITE setTheme NOTIFY themeChanged)
    Q_PROPERTY(int fontSize READ fontSize WRITE setFontSize NOTIFY fontSizeChanged)
    Q_PROPERTY(
        QString lastModelPath READ lastModelPath WRITE setLastModelPath NOTIFY lastModelPathChanged)
    Q_PROPERTY(bool perfOverlay READ perfOverlay WRITE setPerfOverlay NOTIFY perfOverlayChanged)
    // The local API server: off by default; "allow network" listens on every interface.
    Q_PROPERTY(bool apiServerEnabled READ apiServerEnabled WRITE setApiServerEnabled NOTIFY
                   apiServerEnabledChanged)
    Q_PROPERTY(
        int apiServerPort READ apiServerPort WRITE setApiServerPort NOTIFY apiServerPortChanged)
    Q_PROPERTY(
        QString apiServerKey READ apiServerKey WRITE setApiServerKey NOTIFY apiServerKeyChanged)
    Q_PROPERTY(bool apiServerAllowNetwork READ apiServerAllowNetwork WRITE setApiServerAllowNetwork
                   NOTIFY apiServerAllowNetworkChanged)

public:
    explicit Settings(QObject* parent = nullptr);

    QString device() const;
    void setDevice(const QString& value);
    int threads() const;
    void setThreads(int value);
    int contextLength() const;
    void setContextLength(int value);
    int gpuReserveGiB() const;  // 0: none
    void setGpuReserveGiB(int value);
    double temperature() const;
    void setTemperature(double value);
    int topK() const;
    void setTopK(int value);
    double topP() const;
    void setTopP(double value);
    double minP() const;
    void setMinP(double value);
    double repeatPenalty() const;
    void setRepeatPenalty(double value);
    int maxTokens() const;
    void setMaxTokens(int value);
    QString systemPrompt() const;
    void setSystemPrompt(const QString& value);
    QString theme() const;
    void setTheme(const QString& value);
    int fontSize() const;
    void setFontSize(int value);
    QString lastModelPath() const;
    void setLastModelPath(const QString& value);
    // The conversation open when the app closed (0: none), reopened on start.
    qint64 lastConversationId() const;
    void setLastConversationId(qint64 id);
    bool perfOverlay() const;
    void setPerfOverlay(bool value);
    bool apiServerEnabled() const;
    void setApiServerEnabled(bool value);
    int apiServerPort() const;  // 0: any free port (tests)
    void setApiServerPort(int value);
    QString apiServerKey() const;  // empty: none required
    void setApiServerKey(const QString& value);
    bool apiServerAllowNetwork() const;
    void setApiServerAllowNetwork(bool value);
    // This run only (the --device option): loads use it instead of the saved device.
    void setDeviceOverride(const QString& value) { m_deviceOverride = value; }

    // device: "auto", "cpu" or a GPU index; theme: "light", "dark", "system".
    EngineSampling sampling() const;
    EngineLoadOptions loadOptions(const QString& modelPath) const;
    Q_INVOKABLE void resetToDefaults();

signals:
    void deviceChanged();
    void threadsChanged();
    void contextLengthChanged();
    void gpuReserveGiBChanged();
    void temperatureChanged();
    void topKChanged();
    void topPChanged();
    void minPChanged();
    void repeatPenaltyChanged();
    void maxTokensChanged();
    void systemPromptChanged();
    void themeChanged();
    void fontSizeChanged();
    void lastModelPathChanged();
    void perfOverlayChanged();
    void apiServerEnabledChanged();
    void apiServerPortChanged();
    void apiServerKeyChanged();
    void apiServerAllowNetworkChanged();

private:
    QSettings m_settings;
    QString m_deviceOverride;
};
