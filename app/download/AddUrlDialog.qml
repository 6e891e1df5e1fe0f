import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import QtQuick.Layouts

// Asks for a link to a .gguf file and, optionally, its SHA-256; the library starts the download.
Dialog {
    id: root
    signal submitted(string url, string sha256)

    objectName: "addUrlDialog"
    title: qsTr("Add a model from a link")
    modal: true
    standardButtons: Dialog.Ok | Dialog.Cancel
    width: 520

    onAboutToShow: {
        urlField.text = ""
        shaField.text = ""
        urlField.forceActiveFocus()
    }
    onAccepted: root.submitted(urlField.text, shaField.text)

    ColumnLayout {
        anchors.fill: parent
        spacing: 8
        Label {
            Layout.fillWidth: true
            wrapMode: Text.Wrap
            text: qsTr("Any direct link to a GGUF file, for example a Hugging Face “resolve” link.")
        }
        TextField {
            id: urlField
            objectName: "urlField"
            Layout.fillWidth: true
            placeholderText: "https://huggingface.co/…/resolve/main/model.Q4_0.gguf"
        }
        TextField {
            id: shaField
            objectName: "shaField"
            Layout.fillWidth: true
            placeholderText: qsTr("SHA-256 (optional)")
            font.family: "monospace"
        }
    }
}
