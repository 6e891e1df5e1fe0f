pragma ComponentBehavior: Bound
import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import QtQuick.Layouts
import QtQuick.Window
import Ember

// The model button of the chat header: lists the installed models (the model library's own
// list, so the menu and the library never disagree) and opens a file picker.
Button {
    id: root
    property ChatController chat
    property InferenceController inference
    property InstalledModelModel models  // ModelLibrary.installed
    signal openFileRequested()
    signal manageModelsRequested()

    objectName: "modelMenuButton"
    flat: true
    // The name as the menu and the file show it, not in the style's capitals.
    font.capitalization: Font.MixedCase
    // The model as the menu lists it: its file's name (the model's own name is the tooltip).
    readonly property string displayName: {
        if (!inference || !inference.modelLoaded) return ""
        const file = inference.modelPath.split("/").pop()
        return file.replace(/\.gguf$/i, "")
    }
    property alias menu: menu

    text: inference && inference.loading ? qsTr("Loading…")
        : displayName.length ? displayName + "  ▾"
        : qsTr("Choose a model  ▾")
    ToolTip.visible: hovered && displayName.length > 0 && inference.modelName.length > 0
    ToolTip.text: inference ? inference.modelName : ""
    onClicked: menu.open()

    AppMenu {
        id: menu
        objectName: "modelMenu"
        // Wide enough for the longest file name, right-aligned with the button and no wider
        // than the window, so that it opens whole inside the window's right edge.
        x: root.width - width
        y: root.height
        margins: 8
        maximumWidth: root.Window.width - 16
        Instantiator {
            model: root.models
            delegate: MenuItem {
                id: entry
                required property string name
                required property string path
                required property string problem
                required property string error
                required property string errorSummary
                // What is wrong with the file, in plain words: it cannot be read (the reader's
                // own message is behind Details), or the engine cannot run it.
                readonly property string trouble: error.length ? errorSummary : problem
                property bool showDetails: false
                objectName: "modelMenuItem"
                // A broken file says so (choosing it explains and keeps the loaded model).
                text: trouble.length ? qsTr("%1 — %2").arg(name).arg(trouble) : name
                checkable: true
                checked: root.inference.modelPath === path
                enabled: !root.inference.loading && !root.inference.generating
                onTriggered: root.chat.loadModelFile(path)
                // Room for the check mark, as the style's own label leaves.
                readonly property real indicatorPadding: indicator ? indicator.width + spacing : 0
                contentItem: ColumnLayout {
                    spacing: 0
                    RowLayout {
                        Layout.leftMargin: entry.indicatorPadding
                        Label {
                            objectName: "modelMenuItemText"
                            text: entry.text
                            font: entry.font
                            color: entry.enabled ? entry.Material.foreground : entry.Material.hintTextColor
                            Layout.fillWidth: true
                        }
                        ToolButton {
                            objectName: "modelMenuDetailsToggle"
                            visible: entry.error.length > 0
                            text: entry.showDetails ? qsTr("Hide details") : qsTr("Details")
                            focusPolicy: Qt.NoFocus
                            onClicked: entry.showDetails = !entry.showDetails
                        }
                    }
                    TextEdit {
                        objectName: "modelMenuDetails"
                        visible: entry.showDetails
                        text: entry.error
                        readOnly: true
                        selectByMouse: true
                        wrapMode: TextEdit.Wrap
                        color: entry.Material.hintTextColor
                        font.family: "monospace"
                        font.pixelSize: 12
                        Layout.fillWidth: true
                        Layout.leftMargin: entry.indicatorPadding
                        Layout.bottomMargin: 6
                    }
                }
            }
            onObjectAdded: (index, object) => menu.insertItem(index, object)
            onObjectRemoved: (index, object) => menu.removeItem(object)
        }
        MenuItem {
            enabled: false
            visible: !root.models || root.models.count === 0
            height: visible ? implicitHeight : 0
            text: qsTr("No models in %1").arg(root.inference ? root.inference.modelsDirectory : "")
        }
        MenuSeparator {}
        MenuItem {
            objectName: "manageModelsItem"
            text: qsTr("Download and manage models…")
            onTriggered: root.manageModelsRequested()
        }
        MenuItem {
            text: qsTr("Open model file…")
            onTriggered: root.openFileRequested()
        }
        MenuItem {
            text: qsTr("Unload model")
            enabled: root.inference && root.inference.modelLoaded && !root.inference.generating
            onTriggered: root.inference.unloadModel()
        }
    }
}
