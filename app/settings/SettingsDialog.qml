import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Ember

// Device, threads, context, sampling defaults, system prompt and appearance.
Dialog {
    id: root
    property Settings settings
    property InferenceController inference
    property ChatController chat
    property ApiServerStatus apiServer: null

    title: qsTr("Settings")
    modal: true
    standardButtons: Dialog.Close
    width: Math.min(parent ? parent.width - 80 : 560, 560)
    height: Math.min(parent ? parent.height - 80 : 640, 640)

    // "auto", each GPU by index, "cpu"
    readonly property list<string> deviceValues: ["auto"].concat(inference.devices.map((n, i) => String(i))).concat(["cpu"])
    readonly property list<string> deviceNames: [qsTr("Auto")].concat(inference.devices.map((n, i) => qsTr("GPU %1: %2").arg(i).arg(n))).concat([qsTr("CPU")])

    ScrollView {
        id: scroll
        objectName: "settingsScroll"
        anchors.fill: parent
        // The fields end left of the vertical scroll bar, which would cover them otherwise.
        contentWidth: availableWidth - ScrollBar.vertical.width - 4
        GridLayout {
            objectName: "settingsGrid"
            width: scroll.contentWidth
            columns: 2
            columnSpacing: 16

            Label { text: qsTr("Model"); font.bold: true; Layout.columnSpan: 2 }
            Label { text: qsTr("Device") }
            ComboBox {
                objectName: "deviceField"
                Layout.fillWidth: true
                model: root.deviceNames
                currentIndex: Math.max(0, root.deviceValues.indexOf(root.settings.device))
                onActivated: (i) => root.settings.device = root.deviceValues[i]
            }
            Label { text: qsTr("CPU threads (0 = auto)") }
            SpinBox { from: 0; to: 256; value: root.settings.threads; editable: true
                      onValueModified: root.settings.threads = value }
            Label { text: qsTr("Context length") }
            SpinBox { from: 256; to: 131072; stepSize: 256; editable: true; value: root.settings.contextLength
                      onValueModified: root.settings.contextLength = value }
            Label { text: qsTr("Leave free on the GPU for other programs (GiB)") }
            SpinBox { objectName: "gpuReserveField"; from: 0; to: 256; editable: true; value: root.settings.gpuReserveGiB
                      onValueModified: root.settings.gpuReserveGiB = value }
            Button {
                Layout.columnSpan: 2
                text: qsTr("Reload model to apply")
                enabled: root.inference.modelLoaded && !root.inference.generating && !root.inference.loading
                onClicked: root.chat.reloadModel()
            }

            Label { text: qsTr("Sampling"); font.bold: true; Layout.columnSpan: 2; Layout.topMargin: 12 }
            Label { text: qsTr("Temperature") }
            NumberField { objectName: "temperatureField"; number: root.settings.temperature; maximum: 5; onNumberEdited: (v) => root.settings.temperature = v }
            Label { text: qsTr("Top-k (0 = off)") }
            SpinBox { objectName: "topKField"; from: 0; to: 1000; editable: true; value: root.settings.topK
                      onValueModified: root.settings.topK = value }
            Label { text: qsTr("Top-p") }
            NumberField { objectName: "topPField"; number: root.settings.topP; maximum: 1; onNumberEdited: (v) => root.settings.topP = v }
            Label { text: qsTr("Min-p") }
            NumberField { objectName: "minPField"; number: root.settings.minP; maximum: 1; onNumberEdited: (v) => root.settings.minP = v }
            Label { text: qsTr("Repeat penalty") }
            NumberField { objectName: "repeatPenaltyField"; number: root.settings.repeatPenalty; maximum: 3; onNumberEdited: (v) => root.settings.repeatPenalty = v }
            Label { text: qsTr("Maximum tokens") }
            SpinBox { from: 1; to: 32768; editable: true; value: root.settings.maxTokens
                      onValueModified: root.settings.maxTokens = value }
            Label { text: qsTr("System prompt"); Layout.alignment: Qt.AlignTop }
            TextArea {
                Layout.fillWidth: true
                wrapMode: TextArea.Wrap
                text: root.settings.systemPrompt
                onEditingFinished: root.settings.systemPrompt = text
            }

            Label { text: qsTr("Appearance"); font.bold: true; Layout.columnSpan: 2; Layout.topMargin: 12 }
            Label { text: qsTr("Theme") }
            ComboBox {
                readonly property list<string> values: ["system", "light", "dark"]
                Layout.fillWidth: true
                model: [qsTr("System"), qsTr("Light"), qsTr("Dark")]
                currentIndex: Math.max(0, values.indexOf(root.settings.theme))
                onActivated: (i) => root.settings.theme = values[i]
            }
            Label { text: qsTr("Font size") }
            SpinBox { from: 9; to: 32; value: root.settings.fontSize
                      onValueModified: root.settings.fontSize = value }
            ApiServerSection {
                Layout.columnSpan: 2
                Layout.fillWidth: true
                settings: root.settings
                server: root.apiServer
            }
            Button {
                Layout.columnSpan: 2
                Layout.topMargin: 12
                text: qsTr("Restore defaults")
                flat: true
                onClicked: root.settings.resetToDefaults()
            }
        }
    }
}
