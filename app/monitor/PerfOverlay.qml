import QtQuick
import QtQuick.Controls.Material
import QtQuick.Layouts
import Ember

// The performance overlay: a translucent panel over the chat with the generation rates, the
// time to first token, context and memory use, and a sparkline of the last minute. `metrics`
// is a PerfMonitor; the values stay after a response.
Rectangle {
    id: root
    property PerfMonitor metrics
    Theme { id: theme; dark: root.Material.theme === Material.Dark }

    readonly property real liveRate: metrics ? metrics.tokensPerSecond : 0
    readonly property real responseRate: metrics ? metrics.responseTokensPerSecond : 0
    readonly property real promptRate: metrics ? metrics.promptTokensPerSecond : 0
    readonly property int promptTokens: metrics ? metrics.promptTokens : 0   // evaluated
    readonly property int promptTotal: metrics && metrics.promptTokensTotal ? metrics.promptTokensTotal : promptTokens
    readonly property real ttftMs: metrics ? metrics.timeToFirstTokenMs : -1
    readonly property int generated: metrics ? metrics.generatedTokens : 0
    readonly property int contextUsed: metrics ? metrics.contextUsed : 0
    readonly property int contextSize: metrics ? metrics.contextSize : 0
    readonly property string backend: metrics ? metrics.backend : ""
    readonly property real memoryUsed: metrics ? metrics.memoryUsed : 0
    readonly property real memoryBudget: metrics ? metrics.memoryBudget : 0
    readonly property bool onGpu: backend === "vulkan"

    function rate(v) { return v <= 0 ? "—" : v >= 100 ? v.toFixed(0) : v.toFixed(1) }
    function bytes(b) {
        if (b >= 1024 * 1024 * 1024) return (b / (1024 * 1024 * 1024)).toFixed(2) + " GiB"
        return (b / (1024 * 1024)).toFixed(1) + " MiB"
    }

    objectName: "perfOverlay"
    implicitWidth: 300
    implicitHeight: column.implicitHeight + 24
    radius: 10
    color: theme.overlayBackground
    border.color: theme.overlayBorder

    ColumnLayout {
        id: column
        anchors.fill: parent
        anchors.margins: 12
        spacing: 5

        RowLayout {
            Text { text: qsTr("PERFORMANCE"); color: theme.overlayTitle; font.pixelSize: 11; font.bold: true; font.letterSpacing: 1 }
            Item { Layout.fillWidth: true }
            Rectangle {
                width: 8; height: 8; radius: 4
                color: root.metrics && root.metrics.generating ? theme.success : theme.idle
            }
            Text {
                objectName: "perfState"
                text: root.metrics && root.metrics.generating ? qsTr("generating") : qsTr("idle")
                color: theme.overlayTitle
                font.pixelSize: 11
            }
        }
        RowLayout {
            Item {
                implicitWidth: liveRate.implicitWidth + unit.implicitWidth + 6
                implicitHeight: liveRate.implicitHeight
                Text {
                    id: liveRate
                    objectName: "perfLiveRate"
                    text: root.rate(root.liveRate)
                    color: theme.overlayStrong
                    font.pixelSize: 28
                    font.bold: true
                }
                Text {
                    id: unit
                    anchors.left: liveRate.right
                    anchors.leftMargin: 6
                    anchors.baseline: liveRate.baseline
                    text: qsTr("tok/s")
                    color: theme.overlayLabel
                    font.pixelSize: 12
                }
            }
            Item { Layout.fillWidth: true }
            Column {
                Text { anchors.right: parent.right; text: qsTr("response"); color: theme.overlayTitle; font.pixelSize: 11 }
                Text {
                    objectName: "perfResponseRate"
                    anchors.right: parent.right
                    text: root.rate(root.responseRate) + " tok/s"
                    color: theme.overlayValue
                    font.pixelSize: 13
                    font.family: "DejaVu Sans Mono"
                }
            }
        }
        Sparkline {
            id: spark
            objectName: "perfSparkline"
            Layout.fillWidth: true
            values: root.metrics ? root.metrics.history : []
            capacity: root.metrics ? root.metrics.historyCapacity : 120
        }
        Text {
            objectName: "perfSparklineCaption"
            text: qsTr("last 60 s · peak %1 tok/s").arg(root.rate(spark.maxValue))
            color: theme.overlayCaption
            font.pixelSize: 10
        }
        Rectangle { Layout.fillWidth: true; height: 1; color: theme.overlayDivider }
        PerfRow {
            objectName: "perfPrompt"
            Layout.fillWidth: true
            label: qsTr("Prompt")
            // The whole prompt, and how much of it was evaluated (the rest came from the cache).
            value: root.promptTotal <= 0 ? "—"
                 : (root.promptTotal > root.promptTokens ? qsTr("%1 tok (%2 new)").arg(root.promptTotal).arg(root.promptTokens)
                                                         : qsTr("%1 tok").arg(root.promptTotal))
                   + (root.promptRate > 0 ? qsTr(" · %1 tok/s").arg(root.rate(root.promptRate)) : "")
        }
        PerfRow {
            objectName: "perfTtft"
            Layout.fillWidth: true
            label: qsTr("First token")
            value: root.ttftMs >= 0 ? root.ttftMs.toFixed(root.ttftMs < 10 ? 2 : 0) + " ms" : "—"
        }
        PerfRow {
            objectName: "perfTokens"
            Layout.fillWidth: true
            label: qsTr("Tokens generated")
            value: String(root.generated)
        }
        PerfRow {
            objectName: "perfContext"
            Layout.fillWidth: true
            label: qsTr("Context")
            value: root.contextSize > 0 ? qsTr("%1 / %2").arg(root.contextUsed).arg(root.contextSize) : "—"
        }
        MeterBar { objectName: "perfContextBar"; Layout.fillWidth: true; value: root.contextUsed; total: root.contextSize }
        Rectangle { Layout.fillWidth: true; height: 1; color: theme.overlayDivider }
        PerfRow {
            objectName: "perfBackend"
            Layout.fillWidth: true
            label: qsTr("Backend")
            value: root.backend.length ? root.backend.toUpperCase() : "—"
        }
        PerfRow {
            objectName: "perfDevice"
            Layout.fillWidth: true
            label: qsTr("Device")
            mono: false
            value: root.metrics && root.metrics.device.length ? root.metrics.device : "—"
        }
        PerfRow {
            objectName: "perfMemory"
            Layout.fillWidth: true
            label: root.onGpu ? qsTr("GPU memory") : qsTr("Memory")
            value: root.memoryBudget > 0 ? qsTr("%1 / %2").arg(root.bytes(root.memoryUsed)).arg(root.bytes(root.memoryBudget)) : "—"
        }
        Text {
            objectName: "perfFallback"
            // Why the model runs on the CPU though a GPU was asked for or expected.
            text: root.metrics && root.metrics.fallbackReason ? qsTr("On the CPU: %1").arg(root.metrics.fallbackReason) : ""
            visible: text.length > 0
            color: theme.warning
            font.pixelSize: 11
            wrapMode: Text.Wrap
            Layout.fillWidth: true
        }
        MeterBar { objectName: "perfMemoryBar"; Layout.fillWidth: true; value: root.memoryUsed; total: root.memoryBudget }
        Text {
            objectName: "perfMemorySource"
            text: root.metrics && root.metrics.memorySource.length ? root.metrics.memorySource : ""
            visible: text.length > 0
            color: theme.overlayCaption
            font.pixelSize: 10
        }
    }
}
